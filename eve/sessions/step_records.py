"""Durable step records in eve's table (``eve_step_records``): read, added, listed.

Each function runs in the caller's transaction: a body's records are read with its progress
in the log (``SessionStore.turn_progress``), and a new one is added in the transaction that
writes its step's events (``DurableRecorder``, through ``SessionWriter.durable``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from eve.sessions.prepared_sql import insert_later, run_prepared
from eve.sessions.tables import step_records

# built once, as the store's statements are (``store.py``)
_OF_WORKFLOW = step_records.c.workflow_id == sa.bindparam("b_workflow")
_RECORDS = sa.select(step_records.c.step_key, step_records.c.record).where(_OF_WORKFLOW)
_IN_ORDER = _RECORDS.order_by(step_records.c.recorded_at)
_RECORD = sa.select(step_records.c.record).where(
    _OF_WORKFLOW, step_records.c.step_key == sa.bindparam("b_key")
)
# a record already there is kept, and read back: of two runs of one workflow (a worker
# taken for dead that still runs), a replay goes on from the one that wrote first. SQLAlchemy
# keeps an INSERT's rowcount only when asked: on PostgreSQL it was -1, and every record
# added was read back
_NEW_RECORD = {
    "sqlite": sqlite.insert(step_records).on_conflict_do_nothing(),
    "postgresql": postgresql.insert(step_records)
    .on_conflict_do_nothing()
    .execution_options(preserve_rowcount=True),
}


def read_records(c: Connection, workflow_id: str) -> dict[str, str]:
    """The records of ``workflow_id``'s steps, by key."""
    records = run_prepared(c, _RECORDS, {"b_workflow": workflow_id})
    return {row.step_key: row.record for row in records}


def add_record(c: Connection, workflow_id: str, key: str, record: str) -> str:
    """Store ``record`` as ``workflow_id``'s step ``key``; the record stored, which is
    another's when another run of the workflow recorded the step first."""
    row = {"workflow_id": workflow_id, "step_key": key, "record": record}
    values = {**row, "recorded_at": time.time()}
    # in a group of the writer lane, with its other records in one statement: a record
    # there already undoes the group, and alone this write reads it (``group_inserts.py``)
    if insert_later(c, _NEW_RECORD["sqlite"], values):
        return record
    added = run_prepared(c, _NEW_RECORD[c.dialect.name], values)
    if added.rowcount == 1:
        return record
    return stored_record(c, workflow_id, key)


@dataclass(frozen=True, kw_only=True)
class NewRecord:
    """``add_record`` of one step, as data: a writer runs it with the step's events
    (``SessionWriter.attach``), and on PostgreSQL the store sends both as one statement
    (``pg_appends.py``)."""

    workflow_id: str
    key: str
    record: str

    def __call__(self, c: Connection) -> str:
        return add_record(c, self.workflow_id, self.key, self.record)


def stored_record(c: Connection, workflow_id: str, key: str) -> str:
    """The record of ``workflow_id``'s step ``key``, which is there."""
    stored: str = c.execute(_RECORD, {"b_workflow": workflow_id, "b_key": key}).one()[0]
    return stored


def list_records(c: Connection, workflow_id: str) -> list[tuple[str, str]]:
    """The records of ``workflow_id`` as (key, record), in the order they were made (for a
    reader: a body reads its own with its progress)."""
    return [(key, record) for key, record in c.execute(_IN_ORDER, {"b_workflow": workflow_id})]
