"""The event emitter: numbers a session's events and hands them to the sink, then the hooks."""

from __future__ import annotations

import inspect
import random
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Protocol

import msgspec

from eve import tracing
from eve.events import Delegation, EventData, EventMeta, SessionEvent, event_of

EventSink = Callable[[SessionEvent], Awaitable[None] | None]


class HookDispatcher(Protocol):
    """Where an emitted event goes after the sink: the agent's hooks (``eve.hooks.HookRelay``)."""

    async def dispatch(self, event: SessionEvent, emitter: EventEmitter) -> None: ...


def new_event_id() -> str:
    # unique, not secret (it is in every stream): the random module's generator, which a
    # forked worker reseeds, instead of the OS's, a system call for every event
    return f"evt_{time.time_ns():016x}{random.getrandbits(40):010x}"


class EventEmitter:
    """Numbers events and hands them to the sink, then to the hooks; one per session.

    Every event of a session passes here, so this is the one place hooks are called: after
    the sink, so a hook sees an event that is already in the stream, and in the emitting
    code's eve context, so a hook reads and updates the session's state. It is also where
    traces are made (``eve.tracing.observe``), before the hooks, so a hook's own spans
    nest under the turn's.
    """

    def __init__(
        self,
        sink: EventSink | None,
        *,
        session_id: str,
        start_index: int = 0,
        hooks: HookDispatcher | None = None,
        delegation: Delegation | None = None,
    ) -> None:
        self.sink = sink
        self.session_id = session_id
        self._next = [start_index]
        self.hooks = hooks
        #: a delegated session's link to its caller, carried by every event of this emitter
        self.delegation = delegation

    @property
    def index(self) -> int:
        return self._next[0]

    def delegate(
        self, *, session_id: str, hooks: HookDispatcher | None, delegation: Delegation
    ) -> EventEmitter:
        """An emitter for a delegated session whose events go into this stream, numbered
        with this emitter's, each carrying ``delegation``."""
        child = EventEmitter(self.sink, session_id=session_id, hooks=hooks, delegation=delegation)
        child._next = self._next
        return child

    async def emit(self, data: EventData) -> SessionEvent:
        """Publish the event whose data is ``data``, with this session's id and link."""
        link = self.delegation
        data = msgspec.structs.replace(
            data,
            session_id=self.session_id,
            node_id=link.node_id if link else data.node_id,
            parent=link.parent if link else data.parent,
        )
        meta = EventMeta(id=new_event_id(), at=datetime.now(UTC).isoformat(), index=self.index)
        event = event_of(data, meta)
        self._next[0] += 1
        if self.sink is not None:
            outcome = self.sink(event)
            # a session's sink (``TurnEvents``) returns None: ``isawaitable``'s checks
            # are left for a sink that returns something, 16 events a turn
            if outcome is not None and inspect.isawaitable(outcome):
                await outcome
        tracing.observe(event)
        if self.hooks is not None:
            await self.hooks.dispatch(event, self)
        return event
