"""The event emitter: numbers a session's events and hands them to the sink, then the hooks."""

from __future__ import annotations

import inspect
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from eve.events import EventMeta, EventType, SessionEvent

__all__ = ["EventEmitter", "EventMeta", "EventSink", "EventType", "HookDispatcher", "SessionEvent"]


EventSink = Callable[[SessionEvent], Awaitable[None] | None]


class HookDispatcher(Protocol):
    """Where an emitted event goes after the sink: the agent's hooks (``eve.hooks.HookRelay``)."""

    async def dispatch(self, event: SessionEvent, emitter: EventEmitter) -> None: ...


def new_event_id() -> str:
    return f"evt_{time.time_ns():016x}{secrets.token_hex(5)}"


class EventEmitter:
    """Numbers events and hands them to the sink, then to the hooks; one per session.

    Every event of a session passes here, so this is the one place hooks are called: after
    the sink, so a hook sees an event that is already in the stream, and in the emitting
    code's eve context, so a hook reads and updates the session's state.
    """

    def __init__(
        self,
        sink: EventSink | None,
        *,
        session_id: str,
        start_index: int = 0,
        hooks: HookDispatcher | None = None,
        tags: Mapping[str, Any] | None = None,
    ) -> None:
        self.sink = sink
        self.session_id = session_id
        self._next = [start_index]
        self.hooks = hooks
        #: data every event of this emitter carries (a delegated session's link to its caller)
        self.tags = dict(tags or {})

    @property
    def index(self) -> int:
        return self._next[0]

    def delegate(
        self, *, session_id: str, hooks: HookDispatcher | None, tags: Mapping[str, Any]
    ) -> EventEmitter:
        """An emitter for a delegated session whose events go into this stream, numbered
        with this emitter's, each carrying ``tags``."""
        child = EventEmitter(self.sink, session_id=session_id, hooks=hooks, tags=tags)
        child._next = self._next
        return child

    async def emit(self, type: EventType, **data: Any) -> SessionEvent:
        event = SessionEvent(
            type=type,
            data={"session_id": self.session_id, **self.tags, **data},
            meta=EventMeta(id=new_event_id(), at=datetime.now(UTC).isoformat(), index=self.index),
        )
        self._next[0] += 1
        if self.sink is not None:
            outcome = self.sink(event)
            if inspect.isawaitable(outcome):
                await outcome
        if self.hooks is not None:
            await self.hooks.dispatch(event, self)
        return event
