"""The session event vocabulary: the envelope every event travels in, on the wire and to hooks.

Boundary data: the loop, sessions, the server, the client and hooks import it; it imports
none of them."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

EventType = Literal[
    "session.started",
    "turn.started",
    "message.received",
    "step.started",
    "reasoning.appended",
    "message.appended",
    "message.completed",
    "actions.requested",
    "input.requested",
    "input.resolved",
    "action.partial",
    "skill.loaded",
    "task.started",
    "task.settled",
    "action.result",
    "step.completed",
    "step.failed",
    "turn.completed",
    "turn.failed",
    "turn.cancelled",
    "turn.waiting",
    "session.waiting",
    "session.completed",
    "session.reset",
    "session.failed",
    "hook.failed",
]


class EventMeta(msgspec.Struct, frozen=True, kw_only=True):
    #: ``evt_`` + a time-ordered unique suffix
    id: str
    #: ISO-8601 UTC timestamp
    at: str
    #: position in the session's event log, from 0
    index: int


class SessionEvent(msgspec.Struct, frozen=True, kw_only=True):
    """``{type, data, meta}``; ``data`` always carries ``session_id``, ``turn_id`` and, inside a
    step, ``step_index``."""

    type: EventType
    data: dict[str, Any]
    meta: EventMeta
