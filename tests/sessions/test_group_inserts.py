"""A group's INSERTs kept for one statement a table (``group_inserts.py``) and its statements
on the driver's cursor (``group_statements.py``): what a write reads, returns and raises is
what it was when each ran through SQLAlchemy."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from eve.sessions import group_inserts
from eve.sessions.accepted import PlaceStarts, accept
from eve.sessions.group_commit import SharedTransaction, joining
from eve.sessions.group_statements import run_raw
from eve.sessions.step_records import NewRecord, add_record, read_records
from eve.sessions.store import EventRow, SessionStore
from eve.sessions.writer_lane import WriterLane
from tests.sessions.test_group_commit import Held, payloads


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    made = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    for name in ("a", "b"):
        made.create_session(name)
    try:
        yield made
    finally:
        made.close()


def step_rows(workflow: str, *texts: str) -> list[EventRow]:
    return [
        EventRow(workflow_id=workflow, body_seq=None, step_key="model:0", attempt=0, payload=t)
        for t in texts
    ]


def insert_statements(store: SessionStore) -> list[tuple[str, int]]:
    """Each INSERT run from now on, with its number of parameters."""
    seen: list[tuple[str, int]] = []

    def before(_c: Any, _cursor: Any, statement: str, params: Any, *_rest: Any) -> None:
        if statement.startswith("INSERT"):
            seen.append((statement.split()[2], len(params)))

    sa.event.listen(store.engine, "before_cursor_execute", before)
    return seen


def test_the_rows_and_records_of_a_group_go_in_one_statement_a_table(
    store: SessionStore,
) -> None:
    seen = insert_statements(store)
    lane = WriterLane()
    held = Held(lane)
    futures = [
        held.write(
            store,
            store.append_events,
            name,
            0,
            step_rows(f"{name}:w", "1", "2"),
            [NewRecord(workflow_id=f"{name}:w", key="model:0", record=f"record {name}")],
        )
        for name in ("a", "b")
    ]
    held.release()
    assert [f.result(10) for f in futures] == [["record a"], ["record b"]]
    assert lane.groups[2] == 1
    assert sorted(seen) == [("eve_events", 4 * 7), ("eve_step_records", 2 * 4)]
    assert payloads(store, "a") == ["1", "2"] and payloads(store, "b") == ["1", "2"]
    assert store.run(lambda c: read_records(c, "b:w")) == {"model:0": "record b"}
    lane.shutdown()


def test_a_later_write_of_the_group_reads_the_rows_kept_for_it(store: SessionStore) -> None:
    """A read that names the table gets the kept rows in first: through the driver's cursor
    (a body's progress) and through SQLAlchemy alike."""
    store.run(lambda c: accept(c, session_id="a", turn=0, kind="turn", workflow_id="a:w"))
    lane = WriterLane()
    held = Held(lane)
    written = held.write(
        store, store.append_events, "a", 0, step_rows("a:w", "x", "y"),
        [NewRecord(workflow_id="a:w", key="model:0", record="kept")],
    )  # fmt: skip
    progress = held.lane.write(
        lambda: store.turn_progress("a:w", records_of="a:w", log_of="a", also=PlaceStarts("a:w")),
        joins=store,
    )
    counted = held.write(
        store,
        store.run,
        lambda c: c.execute(
            sa.text("SELECT count(*) FROM eve_events WHERE session_id = 'a'")
        ).scalar(),
    )
    held.release()
    assert written.result(10) == ["kept"]
    found = progress.result(10)
    assert found.written == {("model:0", 0): 2} and found.records == {"model:0": "kept"}
    assert found.next_index == 2
    assert counted.result(10) == 2
    assert lane.groups[3] == 1
    lane.shutdown()


def test_a_record_there_already_undoes_the_group_and_alone_is_read_back(
    store: SessionStore,
) -> None:
    """Of two runs of one workflow the first record stays: the group cannot tell which of its
    records were new, so it is undone, and alone each write finds what it did before."""
    store.run(lambda c: add_record(c, "a:w", "model:0", "first"))
    lane = WriterLane()
    held = Held(lane)
    again = held.write(
        store, store.append_events, "a", 0, step_rows("a:w", "x"),
        [NewRecord(workflow_id="a:w", key="model:0", record="second")],
    )  # fmt: skip
    other = held.write(store, store.append_events, "b", 0, step_rows("b:w", "z"))
    held.release()
    assert again.result(10) == ["first"]
    assert other.result(10) == []
    assert lane.groups == {1: 3}  # the blocker, then the two again, alone
    assert payloads(store, "a") == ["x"] and payloads(store, "b") == ["z"]
    lane.shutdown()


def test_a_taken_index_fails_only_its_own_write(store: SessionStore) -> None:
    store.append_events("a", 0, step_rows("a:w", "taken"))
    lane = WriterLane()
    held = Held(lane)
    clash = held.write(store, store.append_events, "a", 0, step_rows("a:w", "again"))
    fine = held.write(store, store.append_events, "b", 0, step_rows("b:w", "z"))
    held.release()
    with pytest.raises(sa.exc.IntegrityError):
        clash.result(10)
    assert fine.result(10) == []
    assert payloads(store, "a") == ["taken"] and payloads(store, "b") == ["z"]
    lane.shutdown()


def test_rows_past_a_statements_parameters_are_cut_in_several(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(group_inserts, "MOST_PARAMETERS", 3 * 7)
    seen = insert_statements(store)
    lane = WriterLane()
    held = Held(lane)
    futures = [
        held.write(store, store.append_events, name, 0, step_rows(f"{name}:w", *"pqrs"))
        for name in ("a", "b")
    ]
    held.release()
    assert [f.result(10) for f in futures] == [[], []]
    assert seen == [("eve_events", 21), ("eve_events", 21), ("eve_events", 14)]
    assert payloads(store, "a") == list("pqrs") and payloads(store, "b") == list("pqrs")
    lane.shutdown()


def test_a_statement_on_the_cursor_returns_and_raises_as_through_sqlalchemy(
    store: SessionStore,
) -> None:
    store.append_events("a", 0, step_rows("a:w", "x", "y"))
    sql = "SELECT idx, payload, max(idx) FROM eve_events WHERE session_id = ? GROUP BY idx"
    with store.engine.connect() as c:
        expected = c.exec_driver_sql(sql, ("a",))
        names, rows = list(expected.keys()), [tuple(r) for r in expected]
        raw = c.connection.dbapi_connection
        assert raw is not None
        found = run_raw(c, raw.cursor(), sql, ("a",))
        assert [tuple(r) for r in found] == rows == [(0, "x", 0), (1, "y", 1)]
        assert [found.first().idx, found.first().payload] == [0, "x"]  # type: ignore[union-attr]
        assert found.scalar() == 0 and found.all() == list(found) and found.rowcount == -1
        assert names[:2] == ["idx", "payload"]
        insert = "INSERT INTO eve_events (session_id, idx, payload) VALUES (?, ?, ?)"
        with pytest.raises(sa.exc.IntegrityError) as raised:
            run_raw(c, raw.cursor(), insert, ("a", 0, "again"))
        assert isinstance(raised.value.orig, sqlite3.IntegrityError)
        assert run_raw(c, raw.cursor(), insert, ("a", 2, "z")).rowcount == 1
        c.rollback()


def test_a_claims_shared_transaction_keeps_no_insert_for_later(store: SessionStore) -> None:
    """A claim joins a shared transaction it commits itself (``claim_now.py``): its rows go
    in as its statements run, never kept for a flush that would not come."""
    seen = insert_statements(store)
    with store.engine.connect() as connection:
        shared = SharedTransaction(store.engine, connection)
        root = connection.begin()
        shared.begin(patience=1.0)
        with joining(shared):
            store.append_events("a", 0, step_rows("a:w", "claimed"))
            assert seen == [("eve_events", 7)]
        root.commit()
    assert payloads(store, "a") == ["claimed"]
