"""On PostgreSQL, what a turn's body reads as it starts, and its place marked started, in one
statement.

A body starting reads its progress (``SessionStore.turn_progress``): its events grouped by
step, its step records, its session's checkpoint, cancel request and highest event index, and
marks its place started (``accepted.PlaceStarts``). In a transaction that was six round trips
(``BEGIN``, the place's ``UPDATE``, three reads, ``COMMIT``), each a thread of a worker taking
the interpreter's lock back after it, once a turn. Here the ``UPDATE`` is a data-modifying
``WITH`` clause and each read a subquery of one ``SELECT``, committed as it runs
(``pg_pools.each_commits``). Every part reads the snapshot the statement started with, as the
transaction's statements each read what was committed as they started (READ COMMITTED): no
part reads the place the ``UPDATE`` writes, so what it returns is what the transaction read.

The statement's text is fixed, so psycopg prepares it as it does the store's others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

_PROGRESS = sa.text(
    "WITH started AS ("
    "UPDATE eve_accepted SET state = 'enqueued' "
    "WHERE workflow_id = :b_started AND state = 'accepted' RETURNING 1) "
    "SELECT "
    "(SELECT json_agg(json_build_array(g.step_key, g.attempt, g.n, g.seq)) FROM ("
    "SELECT step_key, attempt, count(*) AS n, max(body_seq) AS seq FROM eve_events "
    "WHERE workflow_id = :b_workflow GROUP BY step_key, attempt) AS g), "
    "(SELECT json_object_agg(step_key, record) FROM eve_step_records "
    "WHERE workflow_id = :b_records), "
    "(SELECT max(idx) FROM eve_events WHERE session_id = :b_session), "
    "s.id IS NOT NULL, s.checkpoint_version, c.data, c.saved_by, s.cancel_workflow_id, "
    "s.checkpoint IS NOT NULL, "
    "(SELECT count(*) FROM started) "
    "FROM (SELECT 1) AS one "
    "LEFT JOIN eve_sessions AS s ON s.id = :b_session "
    "LEFT JOIN eve_checkpoints AS c ON c.session_id = s.id AND c.version = s.checkpoint_version"
)


@dataclass(frozen=True, kw_only=True)
class ProgressRead:
    """What ``read_progress`` found, as ``turn_progress``'s reads in a transaction find it."""

    #: the body's events counted by ``(step key, attempt)``: key, attempt, count, and the
    #: group's last body seq
    grouped: list[tuple[Any, ...]]
    #: the step records of ``records_of``, by key
    records: dict[str, str]
    #: the session's row, as ``store._BODY_START`` selects it: checkpoint version, its data,
    #: who saved it, the turn asked to cancel, the log's highest index, a checkpoint in the
    #: row; None without a session row (or none asked for)
    start: tuple[Any, ...] | None
    #: the log's highest index (None: an empty log, or none asked for)
    high: int | None


def read_progress(
    c: Connection,
    workflow_id: str,
    *,
    records_of: str | None,
    log_of: str | None,
    starts: str | None,
) -> ProgressRead:
    """Read a body's progress on ``c`` (a connection in autocommit mode), marking the place of
    workflow ``starts`` started in the same statement."""
    row = c.execute(
        _PROGRESS,
        {
            "b_started": starts,
            "b_workflow": workflow_id,
            "b_records": records_of,
            "b_session": log_of,
        },
    ).one()
    # psycopg decodes ``json`` values itself
    groups, records, high, found, version, data, saved_by, asked, legacy, _ = row
    start = (version, data, saved_by, asked, high, legacy) if found else None
    return ProgressRead(
        grouped=[tuple(group) for group in groups or ()],
        records=records or {},
        start=start,
        high=high,
    )
