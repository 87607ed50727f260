"""A durable step part's fresh attempt, and who must hear of it first.

A step part that runs fresh (not replayed from its record) may follow an attempt that died
before its record was written; what that attempt wrote outside the record (a memory entry)
would be written again. The durable recorder (``eve.sessions``) announces each fresh
attempt here, and listeners (``eve.memory``) undo the earlier attempt's writes, without
either package importing the other: a shared module, as ``eve._cancellation`` is.
"""

from __future__ import annotations

import weakref
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Protocol

from eve.auth.principal import OPERATOR, Principal


@dataclass(frozen=True, kw_only=True)
class StepAttempt:
    """A durable step part starting to run fresh (not replayed from its record).

    ``step`` names the part across a crash and its rerun (the turn's workflow and the part's
    record key): an attempt that died before its record was written leaves effects tagged
    with it, and the next fresh attempt of the same part undoes them first.
    """

    step: str
    session_id: str
    principal: Principal = OPERATOR


class FreshStepListener(Protocol):
    async def fresh_step(self, attempt: StepAttempt) -> None:
        """Undo what an unrecorded earlier attempt of ``attempt.step`` left behind."""
        ...


#: the step part running fresh now (None: in process, or a replay): what a write tags
running_step: ContextVar[StepAttempt | None] = ContextVar("eve_running_step", default=None)
# weak: a listener (a memory host) goes with the service that made it
_listeners: weakref.WeakSet[FreshStepListener] = weakref.WeakSet()


def listen_for_fresh_steps(listener: FreshStepListener) -> None:
    _listeners.add(listener)


def stop_listening_for_fresh_steps(listener: FreshStepListener) -> None:
    _listeners.discard(listener)


class FreshStep:
    """``fresh_step``'s async context. The durable recorder enters it, so eve.sessions
    need not know what the listeners (memory) keep.

    A class rather than an ``asynccontextmanager``: it wraps every step of every turn, and
    the generator's machinery and a look through the listeners' ``WeakSet`` (a guarded
    iteration, with none listening in a process without memory) were most of its cost."""

    __slots__ = ("_attempt", "_token")

    def __init__(self, attempt: StepAttempt) -> None:
        self._attempt = attempt
        self._token: Token[StepAttempt | None] | None = None

    async def __aenter__(self) -> None:
        if _listeners:
            for listener in list(_listeners):
                await listener.fresh_step(self._attempt)
        self._token = running_step.set(self._attempt)

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._token is not None, "entered before it exits"
        running_step.reset(self._token)


def fresh_step(attempt: StepAttempt) -> FreshStep:
    """Run a step part's fresh attempt (``async with``): listeners undo an earlier
    unrecorded attempt's effects first, then the part runs with ``running_step`` naming it."""
    return FreshStep(attempt)
