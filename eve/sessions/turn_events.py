"""The event sink of one turn workflow: skips what a replay already wrote, marks retries.

A recovered workflow runs its body again. Events the body emits carry their position in
the body (``body_seq``); the ones already in the log are not appended twice. Events
emitted inside a durable step appear only when the step really runs; when it runs again
after a crash they are appended again with ``attempt`` ≥ 1 in their data, so a reader can
tell a retry from the first run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import msgspec

from eve.execution.events import SessionEvent
from eve.sessions.event_log import Pending, SessionWriter
from eve.sessions.store import TurnProgress


class TurnEvents:
    def __init__(self, writer: SessionWriter, *, workflow_id: str, progress: TurnProgress) -> None:
        self.writer = writer
        self.workflow_id = workflow_id
        self.progress = progress
        self.body_seq = -1
        self.step_key: str | None = None
        self.attempt = 0

    def __call__(self, event: SessionEvent) -> None:
        if self.step_key is None:
            self.body_seq += 1
            if self.body_seq <= self.progress.last_body_seq:
                return
            self.writer.add(
                Pending(event=event, workflow_id=self.workflow_id, body_seq=self.body_seq)
            )
            return
        if self.attempt:
            event = msgspec.structs.replace(event, data={**event.data, "attempt": self.attempt})
        self.writer.add(
            Pending(
                event=event,
                workflow_id=self.workflow_id,
                step_key=self.step_key,
                attempt=self.attempt,
            )
        )

    @asynccontextmanager
    async def step(self, key: str) -> AsyncIterator[int]:
        """Around a durable step's body; yields the attempt number (0 the first time)."""
        self.attempt = self.progress.attempts.get(key, -1) + 1
        self.progress.attempts[key] = self.attempt
        self.step_key = key
        try:
            yield self.attempt
        finally:
            self.step_key = None
            self.attempt = 0
            # the step's events are durable before DBOS records the step as done
            await self.writer.flush()

    async def flush(self) -> None:
        await self.writer.flush()
