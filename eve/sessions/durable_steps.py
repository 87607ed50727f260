"""The loop's seams made durable: checkpointed steps and approvals that park the turn.

``DurableRecorder`` runs each part of an agent step (the model response and its tool
calls; a step splits into parts only where a call waits for a person) as one DBOS step
that records its value *and the session state after it*; on recovery DBOS hands back the
record, the state is restored from it, and neither the model nor the tools run again.
``DurableApproval`` asks a person from the workflow body: it publishes ``input.requested``
and ``turn.waiting`` and waits on a durable message, so the wait survives a restart and
the answer is consumed exactly once.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec
from dbos import DBOS

from eve.cancellation import CancelSignal
from eve.context.active import EveContext
from eve.execution.checkpoints import Produce, StepPart
from eve.execution.events import EventEmitter
from eve.execution.tool_calls import ApprovalRequest
from eve.redact import redact
from eve.sessions.checkpoint import StepCheckpoint
from eve.sessions.store import SessionStore
from eve.sessions.turn_events import TurnEvents

T = TypeVar("T")

INPUT_TOPIC = "input"
#: a parked wait re-arms this often; each wait is one recorded DBOS operation
_WAIT_SECONDS = 3600.0
APPROVAL_OPTIONS = [
    {"id": "approve", "label": "Approve"},
    {"id": "deny", "label": "Deny"},
]


class DurableRecorder:
    def __init__(self, events: TurnEvents, context: EveContext, approved_once: set[str]) -> None:
        self.events = events
        self.context = context
        self.approved_once = approved_once

    async def part(self, key: str, produce: Produce) -> StepPart:
        return await self._checkpointed(key, produce, StepPart)

    async def _checkpointed(
        self, key: str, produce: Callable[[], Awaitable[T]], kind: type[T]
    ) -> T:
        ran = False

        async def run() -> bytes:
            nonlocal ran
            ran = True
            async with self.events.step(key) as attempt:
                value = await produce()
            record = StepCheckpoint(
                value=msgspec.Raw(msgspec.json.encode(value)),
                state=self.context.snapshot(),
                approved_once=sorted(self.approved_once),
                attempt=attempt,
                events=self.events.step_events,
            )
            # stored as the event log is: no known secret in it (a model that echoes a key,
            # a tool's progress message), so a replay sees [redacted] where a key was
            return redact(msgspec.json.encode(record).decode()).encode()

        recorded: bytes = await DBOS.run_step_async({"name": key}, run)
        checkpoint = msgspec.json.decode(recorded, type=StepCheckpoint)
        if not ran:
            self.events.replayed(key, checkpoint.attempt, checkpoint.events)
        self.context.restore(checkpoint.state)
        self.approved_once.update(checkpoint.approved_once)
        return msgspec.json.decode(checkpoint.value, type=kind)


def request_id_for(workflow_id: str, call_id: str) -> str:
    """Stable across replays of the same workflow, distinct for every call."""
    return "inp_" + hashlib.sha256(f"{workflow_id}\0{call_id}".encode()).hexdigest()[:32]


class DurableApproval:
    """An ``ApprovalHook`` that parks the turn until someone answers over the session API."""

    def __init__(
        self,
        *,
        store: SessionStore,
        session_id: str,
        workflow_id: str,
        turn_id: str,
        emitter: EventEmitter,
        events: TurnEvents,
        signal: CancelSignal,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.workflow_id = workflow_id
        self.turn_id = turn_id
        self.emitter = emitter
        self.events = events
        self.signal = signal

    async def __call__(self, request: ApprovalRequest) -> bool:
        request_id = request_id_for(self.workflow_id, request.call_id)
        await DBOS.run_step_async(
            {"name": f"input.open:{request_id}"},
            asyncio.to_thread,
            self.store.add_input_request,
            request_id,
            self.session_id,
            self.workflow_id,
        )
        await self.emitter.emit(
            "input.requested",
            turn_id=self.turn_id,
            requests=[
                {
                    "request_id": request_id,
                    "kind": "tool-approval",
                    "tool_name": request.tool_name,
                    "call_id": request.call_id,
                    "input": request.input,
                    "rule": request.rule,
                    "options": APPROVAL_OPTIONS,
                }
            ],
        )
        await self.emitter.emit("turn.waiting", turn_id=self.turn_id, on="input")
        await self.events.flush()
        option = await self._answer(request_id)
        await DBOS.run_step_async(
            {"name": f"input.close:{request_id}"},
            asyncio.to_thread,
            self.store.resolve_input_request,
            request_id,
        )
        await self.emitter.emit(
            "input.resolved", turn_id=self.turn_id, request_id=request_id, option_id=option
        )
        return option == "approve"

    async def _answer(self, request_id: str) -> str:
        while True:
            message: Any = await DBOS.recv_async(INPUT_TOPIC, timeout_seconds=_WAIT_SECONDS)
            if not isinstance(message, dict):
                continue
            if message.get("cancel"):
                self.signal.cancel("cancelled")
                return "cancelled"
            if message.get("request_id") == request_id:
                return str(message.get("option_id"))
