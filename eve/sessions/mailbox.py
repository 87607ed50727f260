"""The one receive loop over a workflow's mailbox (``eve.wire.mailbox``).

A turn parked on an approval or a limit, and a task parked on a question, an event or a
sleep, all wait here. Messages the body is not waiting for yet are kept in arrival order
and handed out when it asks for them; a replayed body receives the same messages in the
same order, so what it kept is rebuilt exactly. Every wait calls ``recv`` once per
message or timeout, whatever the message, so a replay makes the same DBOS operations.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, assert_never

from dbos import DBOS

from eve._cancellation import CancelSignal
from eve.wire.mailbox import (
    MAILBOX_TOPIC,
    AnswerMail,
    CancelMail,
    Deliverable,
    EventMail,
    read_mail,
)

#: an open-ended wait re-arms this often; each wait is one recorded DBOS operation
WAIT_SECONDS = 3600.0

M = TypeVar("M", AnswerMail, EventMail)


@dataclass(kw_only=True)
class Mailbox:
    """One workflow body's mailbox: a cancel message cancels ``signal``."""

    signal: CancelSignal
    #: messages that arrived before the body waited for them, in arrival order
    kept: list[Deliverable] = field(default_factory=list)

    async def answer(self, request_id: str) -> AnswerMail | None:
        """The answer to ``request_id``; None when the turn was cancelled first."""
        got = await self.receive(AnswerMail, lambda m: m.request_id == request_id)
        return None if isinstance(got, CancelMail) else got

    async def answers(self, request_ids: Sequence[str]) -> dict[str, AnswerMail] | None:
        """The answers to all of ``request_ids``, by id, in whatever order they come; None
        when the turn was cancelled first."""
        pending, given = set(request_ids), {}
        while pending:
            got = await self.receive(AnswerMail, lambda m: m.request_id in pending)
            if got is None or isinstance(got, CancelMail):
                return None
            given[got.request_id] = got
            pending.discard(got.request_id)
        return given

    def kept_one(self, kind: type[M], wanted: Callable[[M], bool]) -> M | None:
        """The first kept message of ``kind`` that ``wanted`` accepts, taken out."""
        for position, message in enumerate(self.kept):
            if isinstance(message, kind) and wanted(message):
                del self.kept[position]
                return message
        return None

    async def receive(
        self, kind: type[M], wanted: Callable[[M], bool], *, deadline: float | None = None
    ) -> M | CancelMail | None:
        """The first message of ``kind`` that ``wanted`` accepts, kept or arriving; a cancel
        (``signal`` cancelled); or None once ``deadline`` (``time.time()``) has passed,
        however many other messages arrive meanwhile."""
        if (kept := self.kept_one(kind, wanted)) is not None:
            return kept
        while True:
            left = WAIT_SECONDS if deadline is None else max(deadline - time.time(), 0.001)
            raw = await DBOS.recv_async(MAILBOX_TOPIC, timeout_seconds=left)
            if raw is None:
                if deadline is not None:
                    return None
                continue
            message = read_mail(raw)
            match message:
                case CancelMail():
                    self.signal.cancel("cancelled")
                    return message
                case AnswerMail() | EventMail():
                    if isinstance(message, kind) and wanted(message):
                        return message
                    self.kept.append(message)
                case _:
                    assert_never(message)
