"""A batch of a session's events as one ``INSERT`` on SQLite, not one step of SQLite a row.

SQLAlchemy sends a batch of rows to SQLite as ``executemany``, and the driver runs
``sqlite3_step`` once a row, letting go of the interpreter's lock around each. On a loaded
worker the writer lane's thread (``writer_lane.py``) then waits for the lock to come back
behind the event loop, up to the switch interval (``eve/server/switching.py``), after every
row: at 1,000 live sessions the lane was busy 52 to 100 % of the time on 15 to 22 % of a
core, and a turn's 16 events were 16 of those waits. One ``INSERT … VALUES (…), (…)`` is one
step, one wait; all of it or none, as the rows of one transaction were, and a taken index
still fails it with ``IntegrityError``.

PostgreSQL keeps SQLAlchemy's statement (its driver sends a batch as one statement already,
``insertmanyvalues``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy.engine import Connection

from eve.sessions.prepared_sql import in_group, run_sql
from eve.sessions.tables import events

if TYPE_CHECKING:
    from eve.sessions.store import EventRow

_COLUMNS = ("session_id", "idx", "workflow_id", "body_seq", "step_key", "attempt", "payload")
#: rows in one statement at most: SQLite takes 32,766 parameters in a statement (since 3.32)
MOST_ROWS = 500
_NEW_EVENTS = events.insert()


def insert_events(
    c: Connection, session_id: str, first_index: int, rows: Sequence[EventRow]
) -> None:
    """Insert ``rows`` into ``session_id``'s log at ``first_index`` onward."""
    if c.dialect.name != "sqlite":
        c.execute(
            _NEW_EVENTS, [_row(session_id, first_index + n, row) for n, row in enumerate(rows)]
        )
        return
    for start in range(0, len(rows), MOST_ROWS):
        chunk = rows[start : start + MOST_ROWS]
        values: list[object] = []
        for offset, row in enumerate(chunk, start=first_index + start):
            values += (
                session_id, offset, row.workflow_id, row.body_seq, row.step_key, row.attempt,
                row.payload,
            )  # fmt: skip
        sql = _statement(len(chunk))
        if (shared := in_group(c)) is not None:
            # with the group's other rows, in one statement (``group_inserts.py``)
            shared.insert_later(sql, values, rows=len(chunk), every_row=False)
        else:
            run_sql(c, sql, tuple(values))


def _row(session_id: str, index: int, row: EventRow) -> dict[str, object]:
    return {
        "session_id": session_id,
        "idx": index,
        "workflow_id": row.workflow_id,
        "body_seq": row.body_seq,
        "step_key": row.step_key,
        "attempt": row.attempt,
        "payload": row.payload,
    }


@functools.lru_cache(maxsize=64)
def _statement(count: int) -> str:
    """The SQL for ``count`` rows (the columns are plain text and integers: no value needs
    a bind processor, so the driver's parameters are SQLAlchemy's)."""
    one = "(" + ", ".join("?" * len(_COLUMNS)) + ")"
    return f"INSERT INTO {events.name} ({', '.join(_COLUMNS)}) VALUES " + ", ".join([one] * count)
