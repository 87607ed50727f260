"""The event writer under a failing database: a batch it could not write is kept and written
first, in its place, and a write whose commit landed though its answer was lost is not
written twice."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from eve.events import SessionEvent
from eve.sessions.db_retry import patient
from eve.sessions.event_log import EventLog, Pending
from eve.sessions.store import EventRow, SessionStore
from tests.sessions.test_step_events import step_events


def fail_inserts(store: SessionStore, times: int) -> list[int]:
    """The next ``times`` inserts into the log fail as a database that went away does."""
    left = [times]

    def refuse(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("INSERT INTO eve_events") and left[0] > 0:
            left[0] -= 1
            raise sqlite3.OperationalError("unable to open database file")

    sa.event.listen(store.engine, "before_cursor_execute", refuse)
    return left


def logged(store: SessionStore) -> list[dict[str, Any]]:
    return [json.loads(p) for p in store.read_events("ses_x", 0)]


def deltas(events: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["message_delta"] for e in events]


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    made = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    made.create_session("ses_x")
    return made


async def test_a_batch_that_failed_is_written_first_when_the_database_is_back(
    store: SessionStore,
) -> None:
    store.retry_seconds = 0  # no waiting: the write fails at once
    writer = EventLog(store).writer("ses_x")
    first, second = (await step_events(4))[:2], (await step_events(4))[2:]
    fail_inserts(store, 1)
    for event in first:
        writer.add(Pending(event=event))
    with pytest.raises(sa.exc.OperationalError):
        await writer.flush()
    assert logged(store) == []  # nothing written, and nothing dropped either:
    for event in second:
        writer.add(Pending(event=event))
    await writer.flush()
    events = logged(store)
    assert [e["meta"]["index"] for e in events] == [0, 1, 2, 3]
    assert deltas(events) == ["0", "1", "2", "3"]
    store.close()


async def test_a_write_that_waits_out_the_fault_loses_nothing(store: SessionStore) -> None:
    # outside a request a store call is tried again while the fault passes (db_retry.py)
    left = fail_inserts(store, 3)
    writer = EventLog(store).writer("ses_x")
    for event in await step_events(3):
        writer.add(Pending(event=event))
    await writer.flush()
    assert left == [0]
    assert deltas(logged(store)) == ["0", "1", "2"]
    store.close()


async def test_a_lost_commit_answer_is_not_written_twice(store: SessionStore) -> None:
    made: list[SessionEvent] = await step_events(2)
    writer = EventLog(store).writer("ses_x")
    # the first batch's commit landed, and its answer was lost: the rows are there already
    landed = writer._rows_of([Pending(event=event) for event in made], 0)
    store.append_events("ses_x", 0, landed)
    writer.next_index = 0
    for event in made:
        writer.add(Pending(event=event))
    await writer.flush()
    assert deltas(logged(store)) == ["0", "1"]
    assert writer.next_index == 2
    # and a row of someone else's at that index is no reason to skip a batch
    other = EventRow(workflow_id=None, body_seq=None, step_key=None, attempt=None, payload="{}")
    store.append_events("ses_x", 2, [other])
    writer.add(Pending(event=(await step_events(3))[2]))
    await writer.flush()
    assert deltas(logged(store)[3:]) == ["2"]
    store.close()


async def test_a_workflow_body_waits_however_long_the_fault_lasts(store: SessionStore) -> None:
    store.retry_seconds = 0  # anyone else would give up at the first failure
    left = fail_inserts(store, 3)
    writer = EventLog(store).writer("ses_x")
    with patient():  # what TurnRuntime.tracked puts around a body
        for event in await step_events(2):
            writer.add(Pending(event=event))
        await writer.flush()
    assert left == [0]
    assert deltas(logged(store)) == ["0", "1"]
    store.close()
