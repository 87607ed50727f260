"""The event sink of one turn workflow: skips what a replay already wrote, marks retries.

A recovered workflow runs its body again. Events the body emits carry their position in
the body (``body_seq``); the ones already in the log are not appended twice. Events
emitted inside a durable step appear only when the step really runs; when it runs again
after a crash they are appended again with ``attempt`` ≥ 1 in their data, so a reader can
tell a retry from the first run.

A step does not wait for its events to be written before DBOS records it: they are part
of its record, and when a recovered turn replays a step whose events did not all reach
the log (the process died between the two writes), the missing ones are appended then,
in their place, since everything after them was not written either.

A turn's end (``turn.completed``, ``turn.cancelled``) is held back until the workflow has
saved the turn's checkpoint (``release``): a reader who sees it and asks for the session's
summary finds the turn counted. What the body emits after it while held (a hook's
``hook.failed`` about it) waits behind it, in order.

Hooks run again with the body, so a hook that fails again reports ``hook.failed`` again. That
report has no body position of its own (whether a hook fails need not repeat, and positions
must): it follows the event it is about, and is skipped when that event is. An MCP
sign-in's ``authorization.required`` has no position either: a recovered run that asks
again shows the new link (``RENEWED``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import msgspec

from eve.events import SessionEvent
from eve.sessions.event_log import Pending, SessionWriter
from eve.sessions.store import TurnProgress

#: the events that tell a turn's outcome, which ``GET /session`` must already count
HELD_UNTIL_SAVED = frozenset({"turn.completed", "turn.cancelled"})
#: body events a recovered run emits with new content, so never skipped as replayed: an
#: MCP sign-in's link (its state and PKCE challenge are new; the old link is void)
RENEWED = frozenset({"authorization.required"})


class TurnEvents:
    def __init__(self, writer: SessionWriter, *, workflow_id: str, progress: TurnProgress) -> None:
        self.writer = writer
        self.workflow_id = workflow_id
        self.progress = progress
        self.body_seq = -1
        self.step_key: str | None = None
        self.attempt = 0
        self.step_events: list[SessionEvent] = []
        #: the last body event was already in the log (so are its ``hook.failed`` reports)
        self.skipped = False
        #: the turn's end and what followed it, until the checkpoint is saved (``release``)
        self.held: list[Pending] = []

    def __call__(self, event: SessionEvent) -> None:
        if self.step_key is None and event.type in RENEWED:
            # emitted anew by each run, never taken for one the log holds: it takes no body
            # position, so the events after it keep theirs
            self._body(Pending(event=event, workflow_id=self.workflow_id))
            return
        if self.step_key is None and event.type == "hook.failed":
            if not self.skipped:
                self._body(Pending(event=event, workflow_id=self.workflow_id))
            return
        if self.step_key is None:
            self.body_seq += 1
            self.skipped = self.body_seq <= self.progress.last_body_seq
            if self.skipped:
                return
            pending = Pending(event=event, workflow_id=self.workflow_id, body_seq=self.body_seq)
            if event.type in HELD_UNTIL_SAVED:
                self.held.append(pending)
            else:
                self._body(pending)
            return
        if self.attempt:
            data = msgspec.structs.replace(event.data, attempt=self.attempt)
            event = msgspec.structs.replace(event, data=data)
        self.step_events.append(event)
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
        """Around a durable step's body; yields the attempt number (0 the first time).

        The step's events are in ``step_events`` afterwards, for its record.
        """
        self.attempt = self.progress.attempts.get(key, -1) + 1
        self.progress.attempts[key] = self.attempt
        self.step_key = key
        self.step_events = []
        try:
            yield self.attempt
        finally:
            self.step_key = None
            self.attempt = 0

    def replayed(self, key: str, attempt: int, recorded: list[SessionEvent]) -> None:
        """A step came back from its record: append the events of it the log lacks."""
        self.progress.attempts[key] = max(self.progress.attempts.get(key, -1), attempt)
        for event in recorded[self.progress.written.get((key, attempt), 0) :]:
            self.writer.add(
                Pending(event=event, workflow_id=self.workflow_id, step_key=key, attempt=attempt)
            )
        self.progress.written[(key, attempt)] = max(
            self.progress.written.get((key, attempt), 0), len(recorded)
        )

    def _body(self, pending: Pending) -> None:
        if self.held:
            self.held.append(pending)
        else:
            self.writer.add(pending)

    def release(self) -> None:
        """The checkpoint is saved (or there is none to save): write what was held."""
        held, self.held = self.held, []
        for pending in held:
            self.writer.add(pending)

    async def flush(self) -> None:
        self.release()
        await self.writer.flush()
