"""Asking a person from a workflow body: tool approvals and workflow tools' questions.

A request is opened in the store (so an answer over the session API can find the workflow
waiting on it and the options it offers), published as ``input.requested`` and
``turn.waiting``, and waited for on the workflow's durable message topic, so the wait
survives a restart and the answer is consumed exactly once. Then it is closed and
``input.resolved`` published, with ``cancelled`` as the option when the turn was cancelled
instead. Request ids are derived from the workflow and what asks, so a replay asks the
same request again rather than a new one.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from dbos import DBOS

from eve._cancellation import CancelSignal
from eve.auth.principal import OPERATOR, Principal
from eve.events import (
    InputRequest,
    InputRequestedData,
    InputResolvedData,
    Option,
    ToolApprovalRequest,
    TurnWaitingData,
)
from eve.execution.events import EventEmitter
from eve.execution.tool_calls import ApprovalRequest
from eve.sessions.mailbox import Mailbox
from eve.sessions.store import SessionStore
from eve.sessions.turn_events import TurnEvents
from eve.wire.mailbox import AnswerMail

APPROVAL_OPTIONS = [Option(id="approve", label="Approve"), Option(id="deny", label="Deny")]

#: waits for the answer to a request id: the option chosen and by whom, or None when
#: cancelled
Answer = Callable[[str], Awaitable[AnswerMail | None]]
#: waits for the answers to all of several request ids, by id; None when cancelled
Answers = Callable[[Sequence[str]], Awaitable[dict[str, AnswerMail] | None]]


def request_id_for(workflow_id: str, asker: str) -> str:
    """Stable across replays of the same workflow, distinct for every call or question."""
    return "inp_" + hashlib.sha256(f"{workflow_id}\0{asker}".encode()).hexdigest()[:32]


@dataclass(frozen=True, kw_only=True)
class InputDesk:
    """Where one workflow asks: the session its requests belong to, and its events."""

    store: SessionStore
    #: the session a person answers through (the root session, for a task's requests)
    session_id: str
    workflow_id: str
    turn_id: str
    emitter: EventEmitter
    events: TurnEvents
    #: who sent the turn's message: its requests are theirs to answer
    principal: Principal = OPERATOR

    async def ask(
        self,
        request: InputRequest,
        options: Sequence[str] | None,
        answer: Answer,
        *,
        by: str | None = None,
    ) -> str | None:
        """Park on ``request`` (an ``input.requested`` entry with its ``request_id``) until
        ``answer`` returns; ``options`` are the ids it accepts (None: approve and deny);
        ``by`` names who may answer besides the turn's principal and operators."""
        request_id = request.request_id
        await self._open(request_id, options, by)
        await self._requested([request])
        given = await answer(request_id)
        return await self._close(request_id, given)

    async def ask_together(
        self, requests: Sequence[tuple[InputRequest, str | None]], answers: Answers
    ) -> list[str | None]:
        """Park on several requests (each with who may answer it besides) asked in one
        round: one ``input.requested`` names them all, and the turn goes on once every one
        is answered; the options chosen, in order (None each: cancelled)."""
        for request, by in requests:
            await self._open(request.request_id, None, by)
        await self._requested([request for request, _ in requests])
        given = await answers([request.request_id for request, _ in requests])
        chosen: list[str | None] = []
        for request, _ in requests:
            answer = None if given is None else given[request.request_id]
            chosen.append(await self._close(request.request_id, answer))
        return chosen

    async def _open(self, request_id: str, options: Sequence[str] | None, by: str | None) -> None:
        await DBOS.run_step_async(
            {"name": f"input.open:{request_id}"},
            asyncio.to_thread,
            self.store.add_input_request,
            request_id,
            self.session_id,
            self.workflow_id,
            options,
            asker=self.principal,
            answer_by=by,
        )

    async def _requested(self, requests: list[InputRequest]) -> None:
        await self.emitter.emit(InputRequestedData(turn_id=self.turn_id, requests=requests))
        await self.emitter.emit(TurnWaitingData(turn_id=self.turn_id, on="input"))
        await self.events.flush()

    async def _close(self, request_id: str, given: AnswerMail | None) -> str | None:
        await DBOS.run_step_async(
            {"name": f"input.close:{request_id}"},
            asyncio.to_thread,
            self.store.resolve_input_request,
            request_id,
        )
        await self.emitter.emit(
            InputResolvedData(
                turn_id=self.turn_id,
                request_id=request_id,
                option_id="cancelled" if given is None else given.option_id,
                responder=None if given is None else given.responder,
            )
        )
        return None if given is None else given.option_id


class DurableApproval:
    """An ``ApprovalHook`` that parks the turn until someone answers over the session API."""

    def __init__(self, desk: InputDesk, signal: CancelSignal) -> None:
        self.desk = desk
        self.mailbox = Mailbox(signal=signal)

    async def __call__(self, request: ApprovalRequest) -> bool:
        entry = self._entry(request)
        chosen = await self.desk.ask(entry, None, self.mailbox.answer, by=request.by)
        return chosen == "approve"

    async def together(self, requests: Sequence[ApprovalRequest]) -> list[bool]:
        """The calls of one step that need a person, asked in one round
        (``execution.tool_calls.ApprovesTogether``)."""
        entries = [(self._entry(request), request.by) for request in requests]
        chosen = await self.desk.ask_together(entries, self.mailbox.answers)
        return [option == "approve" for option in chosen]

    def _entry(self, request: ApprovalRequest) -> ToolApprovalRequest:
        return ToolApprovalRequest(
            request_id=request_id_for(self.desk.workflow_id, request.call_id),
            tool_name=request.tool_name,
            call_id=request.call_id,
            input=request.input,
            rule=request.rule,
            options=APPROVAL_OPTIONS,
            by=request.by,
        )
