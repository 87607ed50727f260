"""Where in a session's log a channel starts reading, and what the engine waits on, from the
store's indexes: so no channel request reads the log from its start (O(history) a turn).

The log is append-only with dense indexes, and every event a turn's workflow writes carries
the turn's workflow id (a rerun's too: ``accepted.Place.log_id``), so a turn's events begin
at the smallest index under that id. The input request rows are written before the log says
a turn waits and closed before it says the answer was taken (``input_requests.py``): they
are the engine's word on what waits, a flush ahead of the log.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.tables import events, input_requests


@dataclass(frozen=True, kw_only=True)
class OpenRequest:
    """An input request the engine has open (its row is ``pending``)."""

    request_id: str
    #: the workflow that waits on it: a turn's, or a task's of the turn
    workflow_id: str


def log_end(c: Connection, session_id: str) -> int:
    """The index the session's next event gets: whatever is written later lands at or after
    it, so a turn accepted after this read starts at or after it."""
    last = c.execute(sa.select(sa.func.max(events.c.idx)).where(events.c.session_id == session_id))
    value = last.scalar()
    return 0 if value is None else int(value) + 1


def first_index(c: Connection, session_id: str, workflow_ids: list[str]) -> int | None:
    """The smallest index of the session's events written by any of ``workflow_ids``
    (the ``eve_events_workflow`` index finds them); None while none is written."""
    if not workflow_ids:
        return None
    found = c.execute(
        sa.select(sa.func.min(events.c.idx)).where(
            events.c.session_id == session_id, events.c.workflow_id.in_(workflow_ids)
        )
    ).scalar()
    return None if found is None else int(found)


def open_requests(c: Connection, session_id: str) -> list[OpenRequest]:
    """The requests of the session that wait for an answer, as the engine has them."""
    rows = c.execute(
        sa.select(input_requests.c.request_id, input_requests.c.workflow_id)
        .where(input_requests.c.session_id == session_id, input_requests.c.status == "pending")
        .order_by(input_requests.c.request_id)
    ).all()
    return [OpenRequest(request_id=row[0], workflow_id=row[1]) for row in rows]


def askers(c: Connection, session_id: str, request_ids: list[str]) -> list[str]:
    """The workflows that asked ``request_ids`` in the session, answered yet or not."""
    rows = c.execute(
        sa.select(input_requests.c.workflow_id)
        .where(
            input_requests.c.session_id == session_id,
            input_requests.c.request_id.in_(request_ids),
        )
        .distinct()
    ).all()
    return sorted(row[0] for row in rows)


def latest_turn_workflow(c: Connection, session_id: str) -> str | None:
    """The workflow of the session's last event written by a turn (or a task of one): the
    latest turn that started. Read backwards along the primary key, so it stops at the first
    such event from the end."""
    found = c.execute(
        sa.select(events.c.workflow_id)
        .where(
            events.c.session_id == session_id,
            events.c.workflow_id.like(f"{_escaped(session_id)}:turn-%", escape="\\"),
        )
        .order_by(events.c.idx.desc())
        .limit(1)
    ).scalar()
    return None if found is None else str(found)


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
