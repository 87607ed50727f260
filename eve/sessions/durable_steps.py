"""The loop's step seam made durable: each part of an agent step is one DBOS step.

``DurableRecorder`` runs each part of an agent step (the model response and its tool
calls; a step splits into parts only where a call waits for a person) as one DBOS step
that records its value *and the session state after it*; on recovery DBOS hands back the
record, the state is restored from it, and neither the model nor the tools run again.
(A person is asked between parts: ``sessions.input_requests``.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec
from dbos import DBOS

from eve.context.active import EveContext
from eve.execution.checkpoints import Produce, StepPart
from eve.execution.compaction import CompactionRecord, ProduceCompaction
from eve.redact import redact
from eve.sessions.checkpoint import StepCheckpoint
from eve.sessions.turn_events import TurnEvents

_parts = msgspec.json.Decoder(StepPart)
_compactions = msgspec.json.Decoder(CompactionRecord)


class DurableRecorder:
    def __init__(self, events: TurnEvents, context: EveContext, approved_once: set[str]) -> None:
        self.events = events
        self.context = context
        self.approved_once = approved_once

    async def part(self, key: str, produce: Produce) -> StepPart:
        return _parts.decode(await self._checkpointed(key, produce))

    async def compaction(self, key: str, produce: ProduceCompaction) -> CompactionRecord:
        """A compaction is a step like a part: its summary is in the record."""
        return _compactions.decode(await self._checkpointed(key, produce))

    async def _checkpointed(
        self, key: str, produce: Callable[[], Awaitable[msgspec.Struct]]
    ) -> msgspec.Raw:
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
        return checkpoint.value
