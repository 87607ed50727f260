"""The long-lived session a schedule's ``session:`` option names, kept in the session database.

A schedule with ``session: digest`` runs every tick as a turn of one session. Which session
that is must outlive any one process and any idempotency key (those expire after a day), so
it is a row of its own: ``eve_schedule_sessions(name → session_id)``. The first tick to find
no row opens the session (under an idempotency key, so ticks racing it open the same one)
and inserts it. A session that has ended (a session limit, a timeout) is replaced by a new
one.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

_metadata = sa.MetaData()

schedule_sessions = sa.Table(
    "eve_schedule_sessions",
    _metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("session_id", sa.String(64), nullable=False),
)


def create_table(c: Connection) -> None:
    _metadata.create_all(c, checkfirst=True)


def session_of(c: Connection, name: str) -> str | None:
    row = c.execute(
        sa.select(schedule_sessions.c.session_id).where(schedule_sessions.c.name == name)
    ).first()
    return None if row is None else str(row[0])


def claim(c: Connection, name: str, session_id: str, *, replacing: str | None) -> str:
    """Make ``session_id`` the session of ``name`` unless another claim came first: the
    session that holds the name afterwards. ``replacing`` is the ended one it takes over."""
    if replacing is None:
        held = session_of(c, name)
        if held is not None:
            return held
        c.execute(schedule_sessions.insert().values(name=name, session_id=session_id))
        return session_id
    c.execute(
        schedule_sessions.update()
        .where(schedule_sessions.c.name == name, schedule_sessions.c.session_id == replacing)
        .values(session_id=session_id)
    )
    return session_of(c, name) or session_id
