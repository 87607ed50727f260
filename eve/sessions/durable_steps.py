"""The loop's step seam made durable: each part of an agent step is one DBOS step.

``DurableRecorder`` runs each part of an agent step (the model response and its tool
calls; a step splits into parts only where a call waits for a person) as one DBOS step
that records its value *and the session state after it*; on recovery DBOS hands back the
record, the state is restored from it, and neither the model nor the tools run again.
(A person is asked between parts: ``sessions.input_requests``.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import msgspec
from dbos import DBOS

from eve.context.active import EveContext
from eve.errors import StepRecordCorrupt
from eve.execution.checkpoints import Produce, S, StepPart
from eve.execution.compaction import CompactionRecord, ProduceCompaction
from eve.redact import redact
from eve.sessions.checkpoint import StepCheckpoint
from eve.sessions.compute_gate import ComputeGate
from eve.sessions.database_errors import storage_failure
from eve.sessions.turn_events import TurnEvents
from eve.sessions.workspaces import WorkspaceKeeper
from eve.step_attempts import StepAttempt, fresh_step

R = TypeVar("R")
_parts = msgspec.json.Decoder(StepPart)
_compactions = msgspec.json.Decoder(CompactionRecord)


class DurableRecorder:
    def __init__(
        self,
        events: TurnEvents,
        context: EveContext,
        approved_once: set[str],
        *,
        gate: ComputeGate,
        workspace: WorkspaceKeeper | None = None,
    ) -> None:
        self.events = events
        self.context = context
        self.approved_once = approved_once
        self.gate = gate
        #: the session's sandbox workspace, checkpointed with each step (None: no sandbox)
        self.workspace = workspace

    async def part(self, key: str, produce: Produce) -> StepPart:
        return await self._checkpointed(key, produce, _parts)

    async def compaction(self, key: str, produce: ProduceCompaction) -> CompactionRecord:
        """A compaction is a step like a part: its summary is in the record."""
        return await self._checkpointed(key, produce, _compactions)

    async def value(self, key: str, produce: Callable[[], Awaitable[S]], kind: type[S]) -> S:
        """A value recorded as one step of its own: no state or events ride with it."""

        async def run() -> str:
            return redact(msgspec.json.encode(await produce()).decode())

        try:
            recorded: str = await DBOS.run_step_async({"name": key}, run)
        except Exception as error:
            if (failed := storage_failure(error)) is not None:
                raise failed from None
            raise
        try:
            return msgspec.json.decode(recorded, type=kind)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise StepRecordCorrupt(
                f"the record of step {key!r} of {DBOS.workflow_id or 'a turn'} cannot be read "
                f"({error}): reset the session (POST …/reset) or start a new one",
                workflow_id=DBOS.workflow_id or "",
                step=key,
            ) from None

    async def _checkpointed(
        self,
        key: str,
        produce: Callable[[], Awaitable[msgspec.Struct]],
        decoder: msgspec.json.Decoder[R],
    ) -> R:
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
            keeper = self.workspace
            record = StepCheckpoint(
                value=msgspec.Raw(msgspec.json.encode(value)),
                state=self.context.snapshot(),
                approved_once=sorted(self.approved_once),
                attempt=attempt,
                events=self.events.step_events,
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
            recorded, decoder, workflow_id=DBOS.workflow_id, step=key
        )
        if not ran:
            self.events.replayed(key, checkpoint.attempt, checkpoint.events)
            if self.workspace is not None and checkpoint.workspace is not None:
                # as the step left it: what a crashed attempt wrote after it is undone
                await asyncio.to_thread(self.workspace.restore, checkpoint.workspace)
        self.context.restore(checkpoint.state)
        self.approved_once.update(checkpoint.approved_once)
        return value


def decode_step_record(
    recorded: bytes, decoder: msgspec.json.Decoder[R], *, workflow_id: str | None, step: str
) -> tuple[StepCheckpoint, R]:
    """A step's record and the value it holds (a part, a compaction); ``StepRecordCorrupt``
    naming the turn and the step when either does not decode (a malformed message part, a
    record edited by hand)."""
    try:
        checkpoint = msgspec.json.decode(recorded, type=StepCheckpoint)
        return checkpoint, decoder.decode(checkpoint.value)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise StepRecordCorrupt(
            f"the record of step {step!r} of {workflow_id or 'a turn'} cannot be read "
            f"({error}); the turn cannot be replayed from it: reset the session "
            "(POST …/reset) or start a new one",
            workflow_id=workflow_id or "",
            step=step,
        ) from None
