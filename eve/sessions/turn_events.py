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

A turn's end (``turn.completed``, ``turn.cancelled``) is held back until the workflow
saves the turn's checkpoint (``release``; the save rides in the transaction that writes it:
``ending``): a reader who sees it and asks for the session's summary finds the turn
counted. What the body emits after it while held (a hook's ``hook.failed`` about it, the
body's last event) waits behind it, in order.

Hooks run again with the body, so a hook that fails again reports ``hook.failed`` again. That
report has no body position of its own (whether a hook fails need not repeat, and positions
must): it follows the event it is about, and is skipped when that event is. An MCP
sign-in's ``authorization.required`` has no position either: a recovered run that asks
again shows the new link (``RENEWED``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec
from sqlalchemy.engine import Connection

from eve.events import SessionEvent
from eve.sessions.event_log import Pending, SessionWriter
from eve.sessions.store import TurnProgress

T = TypeVar("T")

#: the events that tell a turn's outcome, which ``GET /session`` must already count
HELD_UNTIL_SAVED = frozenset({"turn.completed", "turn.cancelled"})
#: body events a recovered run emits with new content, so never skipped as replayed: an
#: MCP sign-in's link (its state and PKCE challenge are new; the old link is void)
RENEWED = frozenset({"authorization.required"})


@dataclass(kw_only=True)
class _Step:
    """A durable step running now, and the events it emitted so far."""

    owner: TurnEvents
    key: str
    attempt: int
    events: list[SessionEvent] = field(default_factory=list)


#: the step the current task runs in: the calls of a concurrent batch are steps at once,
#: each in its own task, so which step an event belongs to is the task's, not the turn's
_running: ContextVar[_Step | None] = ContextVar("eve_turn_step", default=None)


class TurnEvents:
    def __init__(self, writer: SessionWriter, *, workflow_id: str, progress: TurnProgress) -> None:
        self.writer = writer
        self.workflow_id = workflow_id
        self.progress = progress
        self.body_seq = -1
        #: the events of the last step this turn finished (``step_events`` outside one)
        self.finished_events: list[SessionEvent] = []
        #: the steps running now (several while a batch of concurrent calls runs)
        self.open: list[_Step] = []
        #: the last body event was already in the log (so are its ``hook.failed`` reports)
        self.skipped = False
        #: the turn's end and what followed it, until the checkpoint is saved (``release``)
        self.held: list[Pending] = []
        #: riders the body went on without waiting for (its steps' records), oldest first:
        #: each has committed before the body waits on anything else (``settled``)
        self.unsettled: list[asyncio.Future[Any]] = []

    @property
    def step_events(self) -> list[SessionEvent]:
        """The events of the step running in this task, else of the last one finished."""
        running = _running.get()
        mine = running is not None and running.owner is self
        return running.events if mine and running is not None else self.finished_events

    def __call__(self, event: SessionEvent) -> None:
        running = _running.get()
        if running is None or running.owner is not self:
            # emitted outside the task of any step of this turn (an MCP server's progress
            # comes from its session's reader): the step running now, as before batches
            running = self.open[-1] if self.open else None
        if running is None:
            self._outside_steps(event)
            return
        if running.attempt:
            data = msgspec.structs.replace(event.data, attempt=running.attempt)
            event = msgspec.structs.replace(event, data=data)
        running.events.append(event)
        self.writer.add(
            Pending(
                event=event,
                workflow_id=self.workflow_id,
                step_key=running.key,
                attempt=running.attempt,
            )
        )

    def _outside_steps(self, event: SessionEvent) -> None:
        if event.type in RENEWED:
            # emitted anew by each run, never taken for one the log holds: it takes no body
            # position, so the events after it keep theirs
            self._body(Pending(event=event, workflow_id=self.workflow_id))
            return
        if event.type == "hook.failed":
            if not self.skipped:
                self._body(Pending(event=event, workflow_id=self.workflow_id))
            return
        self.body_seq += 1
        self.skipped = self.body_seq <= self.progress.last_body_seq
        if self.skipped:
            return
        pending = Pending(event=event, workflow_id=self.workflow_id, body_seq=self.body_seq)
        if event.type in HELD_UNTIL_SAVED:
            self.held.append(pending)
        else:
            self._body(pending)

    @asynccontextmanager
    async def step(self, key: str) -> AsyncIterator[int]:
        """Around a durable step's body; yields the attempt number (0 the first time).

        The step's events are in ``step_events`` afterwards, for its record.
        """
        attempt = self.progress.attempts.get(key, -1) + 1
        self.progress.attempts[key] = attempt
        step = _Step(owner=self, key=key, attempt=attempt)
        token = _running.set(step)
        self.open.append(step)
        try:
            yield attempt
        finally:
            _running.reset(token)
            self.open.remove(step)
            self.finished_events = step.events

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

    def ending(self, work: Callable[[Connection], Any]) -> asyncio.Future[Any]:
        """``work`` (the checkpoint's save, the end of the body's place) in the transaction
        of the body's last events; its result once that commits. It commits with the
        events emitted before it that are not written yet, or after them, never before;
        and with what ``release`` adds right after it, in the same transaction."""
        return self.writer.attach(work, workflow_id=self.workflow_id)

    def release(self) -> None:
        """The checkpoint is saved, or is saved with what is held (``ending`` just before),
        or there is none to save: write what was held."""
        held, self.held = self.held, []
        for pending in held:
            self.writer.add(pending)

    def defer(self, work: Callable[[Connection], T]) -> asyncio.Future[T]:
        """``work`` (a step's record) in the transaction of the events emitted before it,
        or of those emitted next (a step's ``step.completed``, the next ``step.started``),
        never in an earlier one; the body goes on without waiting for it (one commit a step
        rather than two) and waits for it at ``settled``. Its result once it commits."""
        done = self.writer.attach(work, workflow_id=self.workflow_id)
        self.unsettled.append(done)
        return done

    async def settled(self) -> None:
        """Wait until every deferred write committed (``SessionWriter.committed``: a
        failed write raises or is waited out as there)."""
        while self.unsettled:
            done = self.unsettled[0]
            if not done.cancelled():  # dropped with a failed body's events (``discard``)
                await self.writer.committed(done)
            # another task waiting here too may have taken it off already
            if self.unsettled and self.unsettled[0] is done:
                self.unsettled.pop(0)

    async def flush(self) -> None:
        self.release()
        await self.writer.flush()
        await self.settled()
