"""The loop's step seam made durable: each record of a turn is one DBOS step.

``DurableRecorder`` runs each record of a turn (a part of an agent step: the model response
and its tool calls; one call of a concurrent batch; a compaction; an MCP listing) as one
DBOS step that records its value *and the session state after it*; on recovery DBOS hands
back the record, the state is restored from it, and neither the model nor the tools run
again. (A person is asked between parts: ``sessions.input_requests``.) The calls of a batch
are steps that run at once; each one's events are its own (``TurnEvents.step``).
"""

from __future__ import annotations

import asyncio
from typing import TypeVar

import msgspec
from dbos import DBOS

from eve._redact import redact
from eve._step_attempts import StepAttempt, fresh_step
from eve.context.active import EveContext
from eve.errors import StepRecordCorrupt
from eve.execution.recording import Produce, RecordKind
from eve.sessions.checkpoint import STEP_RECORD_VERSION, StepCheckpoint
from eve.sessions.compute_gate import ComputeGate
from eve.sessions.database_errors import storage_failure
from eve.sessions.turn_events import TurnEvents
from eve.sessions.workspaces import WorkspaceKeeper

T = TypeVar("T")
_records = msgspec.json.Decoder(StepCheckpoint)


class DurableRecorder:
    """A ``StepRecorder`` whose every record is one DBOS step, with the session state after
    it and the events it emitted (and, with a sandbox, the workspace's state)."""

    def __init__(
        self,
        events: TurnEvents,
        context: EveContext,
        *,
        gate: ComputeGate,
        workspace: WorkspaceKeeper | None = None,
    ) -> None:
        self.events = events
        self.context = context
        self.gate = gate
        #: the session's sandbox workspace, checkpointed with each step (None: no sandbox)
        self.workspace = workspace

    async def record(self, key: str, produce: Produce[T], kind: RecordKind[T]) -> T:
        ran = False

        async def run() -> bytes:
            nonlocal ran
            ran = True
            # the permit covers the computing only: a replayed step takes none
            async with self.gate.held(), self.events.step(key) as attempt:
                # an earlier attempt that died before its record leaves writes (a memory
                # saved) that this attempt would otherwise repeat: undone first
                fresh = StepAttempt(
                    step=f"{DBOS.workflow_id}/{key}",
                    session_id=self.context.session_id,
                    principal=self.context.principal,
                )
                async with fresh_step(fresh):
                    value = await produce()
                step_events = self.events.step_events
            keeper = self.workspace
            record = StepCheckpoint(
                value=msgspec.Raw(msgspec.json.encode(value)),
                state=self.context.snapshot(),
                version=STEP_RECORD_VERSION,
                attempt=attempt,
                events=step_events,
                workspace=None
                if keeper is None
                else await asyncio.to_thread(keeper.checkpoint, DBOS.workflow_id),
            )
            # stored as the event log is: no known secret in it (a model that echoes a key,
            # a tool's progress message), so a replay sees [redacted] where a key was
            return redact(msgspec.json.encode(record).decode()).encode()

        try:
            recorded: bytes = await DBOS.run_step_async({"name": key}, run)
        except Exception as error:
            # a write the storage refused ends the turn with its name, not the driver's
            # message (which quotes the SQL and its parameters)
            if (failed := storage_failure(error)) is not None:
                raise failed from None
            raise
        checkpoint, value = decode_step_record(
            recorded, kind.decoder, workflow_id=DBOS.workflow_id, step=key
        )
        if not ran:
            self.events.replayed(key, checkpoint.attempt, checkpoint.events)
            if self.workspace is not None and checkpoint.workspace is not None:
                # as the step left it: what a crashed attempt wrote after it is undone
                await asyncio.to_thread(self.workspace.restore, checkpoint.workspace)
        self.context.restore(checkpoint.state)
        return value


def decode_step_record(
    recorded: bytes, decoder: msgspec.json.Decoder[T], *, workflow_id: str | None, step: str
) -> tuple[StepCheckpoint, T]:
    """A step's record and the value it holds (a part, a compaction); ``StepRecordCorrupt``
    naming the turn and the step when either does not decode (a malformed message part, a
    record edited by hand) or the record is of another format (an eve from before the turn
    was a state machine: its parts do not say what the loop now needs)."""
    try:
        checkpoint = _records.decode(recorded)
        value = decoder.decode(checkpoint.value)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise _corrupt(f"cannot be read ({error})", workflow_id, step) from None
    if checkpoint.version != STEP_RECORD_VERSION:
        written = (
            f"was written in format {checkpoint.version}; this eve reads {STEP_RECORD_VERSION}"
        )
        raise _corrupt(written, workflow_id, step)
    return checkpoint, value


def _corrupt(problem: str, workflow_id: str | None, step: str) -> StepRecordCorrupt:
    return StepRecordCorrupt(
        f"the record of step {step!r} of {workflow_id or 'a turn'} {problem}; the turn "
        "cannot be replayed from it: reset the session (POST …/reset) or start a new one",
        workflow_id=workflow_id or "",
        step=step,
    )
