"""On PostgreSQL, a body's end as one call of a function of eve's schema: its last events, its
last steps' records, its checkpoint's save, its place done and the session's next place.

The end rides in the transaction of the body's last events (``TurnEvents.ending``): in
statements, that was six round trips (``BEGIN``; the events with the record,
``pg_appends.py``; the checkpoint's save with the session's pointer to it; the place done
with the session's row locked; the next place read; ``COMMIT``), each a lane call's thread
taking the interpreter's lock back after it. Here the same statements run inside
``eve_end_turn_v1``, called as one statement on a connection in autocommit mode: it commits
as it returns, and an error anywhere (a taken event index: ``IntegrityError``, as before)
rolls all of it back.

The next place is read after the session's row is locked, and PL/pgSQL runs each statement
with a snapshot of its own (READ COMMITTED), so that read sees a place a message's claim
accepted while it held the row (``accepted.deliverable``). One statement of data-modifying
``WITH`` clauses would not: all of it reads the snapshot taken before the wait for the lock,
and the place neither the claim nor the end started would wait for the sweep.

The name carries a version: a change to the function is a new name, so workers of two eve
versions on one database each call their own. Each store makes it as it opens, unless it is
there (``install``); a store that cannot make it ends bodies in a transaction.

That transaction (``accepted.PlaceEnds`` run as it is) stays, as SQLite's end and this one's
fallback, so the end is written twice: ``tests/sessions/test_pg_turn_end_agrees.py`` runs
the same ends both ways and compares the rows they leave.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from eve.sessions.accepted import PlaceEnds, place_of
from eve.sessions.database_errors import failure_kind
from eve.sessions.pg_appends import row_arrays
from eve.sessions.pg_claim_sql import install as install_function
from eve.sessions.pg_pools import each_commits
from eve.sessions.step_records import NewRecord

if TYPE_CHECKING:
    from eve.sessions.store import EventRow

log = logging.getLogger("eve.sessions")

NAME = "eve_end_turn_v1"

DEFINITION = f"""
CREATE FUNCTION {NAME}(
    p_session text, p_first integer,
    p_workflows text[], p_seqs integer[], p_keys text[], p_attempts integer[],
    p_payloads text[],
    p_record_workflows text[], p_record_keys text[], p_records text[], p_at float8,
    p_saves boolean, p_version integer, p_data text, p_saved_by text,
    p_workflow text,
    OUT stored_records text[], OUT head_turn integer, OUT head_kind text,
    OUT head_input text, OUT head_state text, OUT head_workflow text,
    OUT head_reruns integer, OUT head_accepted_at float8
) LANGUAGE plpgsql AS $end$
DECLARE
    stored text;
BEGIN
    INSERT INTO eve_events (session_id, idx, workflow_id, body_seq, step_key, attempt, payload)
    SELECT p_session, p_first + r.n - 1, r.w, r.s, r.k, r.a, r.p
    FROM unnest(p_workflows, p_seqs, p_keys, p_attempts, p_payloads)
        WITH ORDINALITY AS r(w, s, k, a, p, n);
    stored_records := '{{}}';
    FOR i IN 1 .. coalesce(array_length(p_record_keys, 1), 0) LOOP
        INSERT INTO eve_step_records (workflow_id, step_key, record, recorded_at)
        VALUES (p_record_workflows[i], p_record_keys[i], p_records[i], p_at)
        ON CONFLICT DO NOTHING;
        IF FOUND THEN
            stored := p_records[i];
        ELSE
            SELECT r.record INTO stored FROM eve_step_records r
            WHERE r.workflow_id = p_record_workflows[i] AND r.step_key = p_record_keys[i];
        END IF;
        stored_records := array_append(stored_records, stored);
    END LOOP;
    IF p_saves THEN
        UPDATE eve_checkpoints c SET version = p_version, data = p_data, saved_by = p_saved_by
        WHERE c.session_id = p_session AND c.version = p_version - 2
            AND NOT EXISTS (
                SELECT 1 FROM eve_checkpoints s
                WHERE s.session_id = p_session AND s.version = p_version
            );
        IF NOT FOUND THEN
            DELETE FROM eve_checkpoints c WHERE c.session_id = p_session
                AND (c.version = p_version OR c.version < p_version - 1);
            INSERT INTO eve_checkpoints (session_id, version, data, saved_by)
            VALUES (p_session, p_version, p_data, p_saved_by);
        END IF;
        UPDATE eve_sessions s SET checkpoint_version = p_version, checkpoint = NULL
        WHERE s.id = p_session;
    END IF;
    UPDATE eve_accepted a SET state = 'done', input = NULL
    WHERE a.workflow_id = p_workflow AND a.state <> 'done';
    PERFORM 1 FROM eve_sessions s WHERE s.id = p_session FOR UPDATE;
    SELECT a.turn, a.kind, a.input, a.state, a.workflow_id, a.reruns, a.accepted_at
    INTO head_turn, head_kind, head_input, head_state, head_workflow, head_reruns,
        head_accepted_at
    FROM eve_accepted a WHERE a.session_id = p_session AND a.state <> 'done'
    ORDER BY a.turn LIMIT 1;
END
$end$
"""

# the head's columns under ``eve_accepted``'s names, for ``accepted.place_of``
_CALL = sa.text(
    "SELECT e.stored_records, CAST(:b_session AS text) AS session_id, e.head_turn AS turn, "
    "e.head_kind AS kind, e.head_input AS input, e.head_state AS state, "
    "e.head_workflow AS workflow_id, e.head_reruns AS reruns, "
    f"e.head_accepted_at AS accepted_at FROM {NAME}("
    "CAST(:b_session AS text), CAST(:b_first AS integer), "
    "CAST(:b_workflows AS text[]), CAST(:b_seqs AS integer[]), CAST(:b_keys AS text[]), "
    "CAST(:b_attempts AS integer[]), CAST(:b_payloads AS text[]), "
    "CAST(:b_record_workflows AS text[]), CAST(:b_record_keys AS text[]), "
    "CAST(:b_records AS text[]), CAST(:b_at AS float8), "
    "CAST(:b_saves AS boolean), CAST(:b_version AS integer), CAST(:b_data AS text), "
    "CAST(:b_saved_by AS text), CAST(:b_workflow AS text)) AS e"
)


@dataclass(frozen=True, kw_only=True)
class BodyEnd:
    """The riders of a batch that are a body's end: its last steps' records, then its end."""

    records: list[NewRecord]
    end: PlaceEnds


def body_end(session_id: str, also: Sequence[Callable[[Connection], Any]]) -> BodyEnd | None:
    """``also`` as the end of a body writing ``session_id``'s log (step records, then a
    ``PlaceEnds`` of that session), if it is one."""
    if not also or not isinstance(end := also[-1], PlaceEnds):
        return None
    if end.session_id != session_id or (end.save and end.save.session_id != session_id):
        return None
    records = [rider for rider in also[:-1] if isinstance(rider, NewRecord)]
    if len(records) != len(also) - 1:
        return None
    return BodyEnd(records=records, end=end)


def end_body(
    c: Connection, session_id: str, first_index: int, rows: Sequence[EventRow], ending: BodyEnd
) -> list[Any]:
    """Append ``rows`` at ``first_index`` onward and run ``ending`` in one call; the riders'
    results, in order: each record stored (another run's, when it recorded the step first),
    then the session's next place to start, if any (``accepted.finish_and_next``)."""
    save = ending.end.save
    row = c.execute(
        _CALL,
        {
            **row_arrays(session_id, first_index, rows),
            "b_record_workflows": [record.workflow_id for record in ending.records],
            "b_record_keys": [record.key for record in ending.records],
            "b_records": [record.record for record in ending.records],
            "b_at": time.time(),
            "b_saves": save is not None,
            "b_version": None if save is None else save.version,
            "b_data": None if save is None else save.data,
            "b_saved_by": None if save is None else save.saved_by,
            "b_workflow": ending.end.workflow_id,
        },
    ).one()
    place = None if row.turn is None or row.state != "accepted" else place_of(row)
    return [*row.stored_records, place]


def install(engine: Engine) -> bool:
    """Make the function unless it is there (two stores opening at once may both try: the
    second finds it made); False when it is not there and cannot be made (a database user
    without the right to create it): the store then ends a body in a transaction, as
    before the function (``accepted.PlaceEnds`` run as it is)."""
    try:
        with each_commits(engine) as c:
            driver = cast(psycopg.Connection[Any], c.connection.dbapi_connection)
            install_function(driver, NAME, DEFINITION)
    except psycopg.Error as error:
        log.warning(
            "%s could not be made (%s): a turn's end takes six round trips rather than one",
            NAME,
            failure_kind(error),
        )
        return False
    return True
