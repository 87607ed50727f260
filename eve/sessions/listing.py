"""``GET /eve/v1/sessions``: a page of sessions, newest first, with a stable cursor.

The cursor names the last session of a page (its creation time and id), so a session
created while someone pages never shifts what the next page holds: new sessions sort
before every cursor. What a session is doing (``Activity``) is read from its latest events.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve._session_summary import Activity, SessionListEntry, SessionPage
from eve.errors import InvalidListQuery
from eve.sessions.checkpoint import decode_checkpoint
from eve.sessions.store import current_checkpoint, owner_ref
from eve.sessions.tables import events, sessions

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
#: the latest events read for a session's activity; past these (a subagent's long run) it
#: is ``running``
_RECENT_EVENTS = 20

#: the latest event of one of these types says what the session does; other types say nothing
_ACTIVITY_OF: dict[str, Activity] = {
    "session.started": "new",
    "session.reset": "new",
    "turn.started": "running",
    "message.received": "running",
    "step.started": "running",
    "step.completed": "running",
    "actions.requested": "running",
    "action.result": "running",
    "task.started": "running",
    "task.settled": "running",
    "input.resolved": "running",
    "input.requested": "waiting",
    "turn.waiting": "waiting",
    "turn.completed": "completed",
    "turn.failed": "failed",
    "turn.cancelled": "cancelled",
    "session.completed": "ended",
}


def parse_limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 3 and 1 <= int(raw) <= MAX_LIMIT):
        raise InvalidListQuery(f"limit must be an integer from 1 to {MAX_LIMIT}")
    return int(raw)


def encode_cursor(created_at: float, session_id: str) -> str:
    raw = json.dumps([created_at, session_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    refused = InvalidListQuery("cursor is not one this server gave out; pass nextCursor as given")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, session_id = json.loads(raw)
    except (binascii.Error, ValueError, TypeError):
        raise refused from None
    if not isinstance(created_at, int | float) or not isinstance(session_id, str):
        raise refused
    return float(created_at), session_id


def list_sessions(
    c: Connection,
    *,
    limit: int,
    cursor: str | None,
    where: sa.ColumnElement[bool] | None = None,
) -> SessionPage:
    """Up to ``limit`` sessions older than ``cursor`` (all, without one), newest first;
    only those ``where`` admits, when given (``access.owned_by``)."""
    query = sa.select(
        sessions.c.id,
        sessions.c.created_at,
        sessions.c.status,
        sessions.c.ended_reason,
        sessions.c.owner_id,
        sessions.c.owner_kind,
        current_checkpoint(),
    )
    if where is not None:
        query = query.where(where)
    if cursor is not None:
        created_at, session_id = decode_cursor(cursor)
        query = query.where(
            sa.or_(
                sessions.c.created_at < created_at,
                sa.and_(sessions.c.created_at == created_at, sessions.c.id < session_id),
            )
        )
    rows = c.execute(
        query.order_by(sessions.c.created_at.desc(), sessions.c.id.desc()).limit(limit + 1)
    ).all()
    entries = [_entry(c, row) for row in rows[:limit]]
    more = len(rows) > limit
    last = rows[limit - 1] if more else None
    return SessionPage(
        sessions=entries,
        next_cursor=None if last is None else encode_cursor(last.created_at, last.id),
    )


def _entry(c: Connection, row: sa.Row[Any, Any, Any, Any, Any]) -> SessionListEntry:
    recent = c.execute(
        sa.select(events.c.payload)
        .where(events.c.session_id == row.id)
        .order_by(events.c.idx.desc())
        .limit(_RECENT_EVENTS)
    ).all()
    payloads = [json.loads(payload) for (payload,) in recent]
    checkpoint = decode_checkpoint(row.checkpoint)
    created = _iso(row.created_at)
    return SessionListEntry(
        session_id=row.id,
        owner=owner_ref(row.owner_id, row.owner_kind),
        status=row.status,
        activity="ended" if row.status == "ended" else _activity(payloads),
        ended_reason=row.ended_reason,
        created_at=created,
        last_activity_at=payloads[0]["meta"]["at"] if payloads else created,
        turns=checkpoint.turns,
        usage=checkpoint.spend.usage,
        cost=checkpoint.spend.cost,
    )


def _activity(latest_first: list[dict[str, object]]) -> Activity:
    for event in latest_first:
        kind = str(event.get("type"))
        data = event.get("data")
        delegated = isinstance(data, dict) and data.get("parent") is not None
        # a subagent's turn ending is not its caller's; a subagent asking a person is
        if delegated and kind != "input.requested":
            continue
        if kind in _ACTIVITY_OF:
            return _ACTIVITY_OF[kind]
    return "running" if latest_first else "new"


def _iso(timestamp: float) -> str:
    """As the events' ``meta.at``: comparable with it, as a string too."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat()
