"""On PostgreSQL, a batch of a step's events and the step's record in one statement.

A step's record rides with the step's events (``SessionWriter.attach``): both must be
durable together. In a transaction that was four round trips (``BEGIN``, the events'
``INSERT``, the record's, ``COMMIT``), each a thread taking the interpreter's lock back
after it; three times a turn of three steps. Here the events' ``INSERT`` is a data-modifying
``WITH`` clause of the record's, one statement committed as it runs: all of it or none, as
the transaction was. PostgreSQL runs such a clause once and to its end whether or not the
statement reads it, and a taken event index fails the whole statement (``IntegrityError``,
which the writer handles as before). A body's last steps' records ride with its end (its
checkpoint, its place done), which is one call of its own (``pg_turn_end.py``); a record with
other work after it is the first statement of their transaction.

The statement's text is fixed (the rows go as arrays), so psycopg prepares it as it does the
store's others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.step_records import NewRecord, stored_record

if TYPE_CHECKING:
    from eve.sessions.store import EventRow

_EVENTS_WITH_RECORD = sa.text(
    "WITH appended AS ("
    "INSERT INTO eve_events (session_id, idx, workflow_id, body_seq, step_key, attempt, payload) "
    "SELECT :b_session, :b_first + n - 1, w, s, k, a, p FROM unnest("
    "CAST(:b_workflows AS varchar[]), CAST(:b_seqs AS integer[]), "
    "CAST(:b_keys AS varchar[]), CAST(:b_attempts AS integer[]), CAST(:b_payloads AS text[])"
    ") WITH ORDINALITY AS r(w, s, k, a, p, n)) "
    "INSERT INTO eve_step_records (workflow_id, step_key, record, recorded_at) "
    "VALUES (:b_record_workflow, :b_record_key, :b_record, :b_at) ON CONFLICT DO NOTHING"
).execution_options(preserve_rowcount=True)


def first_record(also: Sequence[Callable[[Connection], Any]]) -> NewRecord | None:
    """The step record ``also`` starts with, if it does: a step's alone, or one with other
    work after it (in a transaction then: the statement, and theirs)."""
    if also and isinstance(also[0], NewRecord):
        return also[0]
    return None


def append_with_record(
    c: Connection, session_id: str, first_index: int, rows: Sequence[EventRow], new: NewRecord
) -> str:
    """Append ``rows`` at ``first_index`` onward and add ``new`` in one statement; the record
    stored (another run's, when it recorded the step first: ``add_record``)."""
    added = c.execute(
        _EVENTS_WITH_RECORD,
        {
            **row_arrays(session_id, first_index, rows),
            "b_record_workflow": new.workflow_id,
            "b_record_key": new.key,
            "b_record": new.record,
            "b_at": time.time(),
        },
    )
    if added.rowcount == 1:
        return new.record
    return stored_record(c, new.workflow_id, new.key)


def row_arrays(session_id: str, first_index: int, rows: Sequence[EventRow]) -> dict[str, Any]:
    """The parameters of ``rows`` appended at ``first_index`` onward, a column an array (the
    statement's text the same for any number of rows; ``pg_turn_end.py`` sends them too)."""
    return {
        "b_session": session_id,
        "b_first": first_index,
        "b_workflows": [row.workflow_id for row in rows],
        "b_seqs": [row.body_seq for row in rows],
        "b_keys": [row.step_key for row in rows],
        "b_attempts": [row.attempt for row in rows],
        "b_payloads": [row.payload for row in rows],
    }
