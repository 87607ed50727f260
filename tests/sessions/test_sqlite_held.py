"""SQLite's calls with the interpreter's lock held: the same library as the driver, the same
results and errors as the driver's path, and a group commit's writes run that way."""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from eve.sessions.claim_now import LoopClaims
from eve.sessions.database_errors import storage_failure
from eve.sessions.event_inserts import insert_events
from eve.sessions.held_statements import hold, release
from eve.sessions.sqlite import sqlite_engine
from eve.sessions.sqlite_held import HeldConnection, found_sqlite
from eve.sessions.store import EventRow, SessionStore
from eve.sessions.writer_lane import WriterLane

pytestmark = pytest.mark.skipif(found_sqlite() is None, reason="no shared libsqlite3 mapped")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    made = sqlite_engine(f"sqlite:///{tmp_path / 'held.sqlite'}")
    with made.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        c.exec_driver_sql("INSERT INTO t (k, v) VALUES (1, 'one'), (2, 'two')")
    try:
        yield made
    finally:
        made.dispose()


@pytest.fixture
def held(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Connection, HeldConnection, list[str]]]:
    """A marked connection of ``engine``, and the statements run held from then on."""
    connection = engine.connect()
    marked = hold(connection)
    assert marked is not None
    ran = counting(monkeypatch)
    try:
        yield connection, marked, ran
    finally:
        release(connection)
        connection.close()


def counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The first word of each statement run held from now on."""
    ran: list[str] = []
    for name in ("run", "query"):
        original = getattr(HeldConnection, name)

        def counted(
            self: HeldConnection, sql: str, parameters: Any, *, call: Any = original
        ) -> Any:
            ran.append(sql.split(maxsplit=1)[0])
            return call(self, sql, parameters)

        monkeypatch.setattr(HeldConnection, name, counted)
    return ran


def test_the_library_is_the_one_the_driver_uses() -> None:
    sqlite = found_sqlite()
    assert sqlite is not None
    assert sqlite.lib.sqlite3_libversion().decode() == sqlite3.sqlite_version
    connection = sqlite3.connect(":memory:")
    assert sqlite.handle(connection) is not None
    connection.close()


def test_writes_in_a_transaction_run_held_with_the_driver_s_rowcount(
    held: tuple[Connection, HeldConnection, list[str]],
) -> None:
    connection, marked, ran = held
    with connection.begin():
        connection.exec_driver_sql("BEGIN IMMEDIATE")
        changed = connection.execute(sa.text("UPDATE t SET v = v || '!' WHERE k >= :k"), {"k": 1})
        assert changed.rowcount == 2
        connection.exec_driver_sql("INSERT INTO t (k, v) VALUES (?, ?)", (3, "three"))
        assert connection.exec_driver_sql("SELECT count(*) FROM t").scalar() == 3
        back = connection.exec_driver_sql("DELETE FROM t WHERE k >= 2 RETURNING v")
        assert sorted(back.scalars()) == ["three", "two!"] and back.rowcount == 2
        # (a statement the driver must run: it sends it as it did)
        assert connection.exec_driver_sql("PRAGMA user_version").scalar() == 0
    assert ran == ["UPDATE", "INSERT", "SELECT", "DELETE", "COMMIT"]
    assert not marked.in_transaction
    with connection.begin():
        rows = connection.exec_driver_sql("SELECT k, v FROM t ORDER BY k").all()
    assert [tuple(r) for r in rows] == [(1, "one!")]


def test_rows_read_held_are_the_driver_s(
    held: tuple[Connection, HeldConnection, list[str]], engine: Engine
) -> None:
    connection, _marked, ran = held
    values = (7, 2.5, "text é", b"\x00blob", None, 2**62)
    query = "SELECT ?, ?, ?, ?, ?, ? FROM t WHERE k = 1 UNION ALL SELECT 1, 2, 3, 4, 5, 6"
    with connection.begin():
        connection.exec_driver_sql("BEGIN IMMEDIATE")
        result = connection.exec_driver_sql(query, values)
        held_rows, held_keys = [tuple(r) for r in result], list(result.keys())
    assert ran == ["SELECT", "COMMIT"]
    with engine.connect() as other:
        result = other.exec_driver_sql(query, values)
        assert [tuple(r) for r in result] == held_rows and list(result.keys()) == held_keys
    assert held_rows[0] == values


def test_outside_a_transaction_or_with_adapted_parameters_the_driver_runs_it(
    held: tuple[Connection, HeldConnection, list[str]],
) -> None:
    connection, _marked, ran = held

    class Name(str):
        pass

    with connection.begin():
        connection.exec_driver_sql("BEGIN IMMEDIATE")
        connection.exec_driver_sql("INSERT INTO t (k, v) VALUES (?, ?)", (4, Name("four")))
    with pytest.raises(OverflowError, match="too large"), connection.begin():
        connection.exec_driver_sql("BEGIN IMMEDIATE")
        # the driver's own error, not a value cut to 64 bits
        connection.exec_driver_sql("INSERT INTO t (k, v) VALUES (?, ?)", (2**63, "huge"))
    assert ran == ["COMMIT"]  # (the transaction's, as a write of it may have run held)
    connection.exec_driver_sql("UPDATE t SET v = 'five' WHERE k = 4")  # (pysqlite's BEGIN)
    assert ran == ["COMMIT"]
    connection.commit()
    with connection.begin():
        assert connection.exec_driver_sql("SELECT v FROM t WHERE k = 4").scalar() == "five"


def test_a_constraint_fails_as_on_the_driver_s_path(
    held: tuple[Connection, HeldConnection, list[str]], engine: Engine
) -> None:
    connection, _marked, ran = held
    statement = "INSERT INTO t (k, v) VALUES (?, ?)"
    with pytest.raises(sa.exc.IntegrityError) as on_held, connection.begin():
        connection.exec_driver_sql("BEGIN IMMEDIATE")
        connection.exec_driver_sql(statement, (1, "again"))
    assert ran == ["INSERT"]
    with pytest.raises(sa.exc.IntegrityError) as on_driver, engine.begin() as other:
        other.exec_driver_sql(statement, (1, "again"))
    held_error, driver_error = on_held.value.orig, on_driver.value.orig
    assert type(held_error) is type(driver_error) is sqlite3.IntegrityError
    assert str(held_error) == str(driver_error) == "UNIQUE constraint failed: t.k"
    assert held_error.sqlite_errorcode == driver_error.sqlite_errorcode  # type: ignore[union-attr]
    assert held_error.sqlite_errorname == driver_error.sqlite_errorname  # type: ignore[union-attr]
    # the group's transaction is still the caller's to roll back: nothing of it stayed
    with engine.connect() as c:
        assert c.exec_driver_sql("SELECT v FROM t WHERE k = 1").scalar() == "one"


def test_a_full_disk_is_the_same_storage_failure(
    held: tuple[Connection, HeldConnection, list[str]],
) -> None:
    connection, _marked, ran = held
    pages = connection.exec_driver_sql("PRAGMA page_count").scalar()
    connection.exec_driver_sql(f"PRAGMA max_page_count = {pages}")
    connection.commit()
    with pytest.raises(sa.exc.OperationalError) as failed, connection.begin():
        connection.exec_driver_sql("BEGIN IMMEDIATE")
        connection.exec_driver_sql("INSERT INTO t (k, v) VALUES (?, ?)", (9, "x" * 100_000))
    assert ran == ["INSERT"]
    assert str(failed.value.orig) == "database or disk is full"
    found = storage_failure(failed.value)
    assert found is not None and found.kind == "disk_full"


def test_begin_meets_another_writer_at_once_as_busy(
    held: tuple[Connection, HeldConnection, list[str]], engine: Engine
) -> None:
    """The held connection's busy handler is off: a locked file answers at once, and the
    caller pauses with the interpreter's lock let go (``take_write_lock``)."""
    connection, marked, _ran = held
    path = engine.url.database
    assert path is not None
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError) as busy:
        marked.begin_immediate()
    assert busy.value.sqlite_errorcode == sqlite3.SQLITE_BUSY
    assert str(busy.value) == "database is locked"
    other.execute("COMMIT")
    other.close()
    marked.begin_immediate()
    assert marked.in_transaction
    connection.rollback()


def test_a_group_commit_s_begin_and_commit_run_held_not_its_statements(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lane's thread lets the lock go at each of its statements, for the event loop."""
    ran = counting(monkeypatch)
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    for name in ("a", "b"):
        store.create_session(name)
    lane = WriterLane()
    # the lane's thread busy until both writes are queued: they are found together
    release_lane = threading.Event()
    blocker = lane.submit(release_lane.wait)
    rows = {
        name: [EventRow(workflow_id=None, body_seq=None, step_key=None, attempt=None, payload=name)]
        for name in ("a", "b")
    }
    futures = [
        lane.write(functools.partial(store.append_events, name, 0, rows[name]), joins=store)
        for name in ("a", "b")
    ]
    release_lane.set()
    assert blocker.result(10) is True
    assert [f.result(10) for f in futures] == [[], []]
    assert lane.groups[2] == 1
    assert ran == ["BEGIN", "COMMIT"]
    assert store.read_events("a", 0) == ["a"] and store.read_events("b", 0) == ["b"]
    lane.shutdown()
    store.close()


def test_a_commit_runs_held_only_where_it_syncs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WAL with ``synchronous=NORMAL`` appends to the WAL at a commit: held. ``FULL`` syncs
    the file at every commit: the driver's, which lets the lock go meanwhile."""
    ran = counting(monkeypatch)
    for synchronous, held_commit in (("NORMAL", True), ("FULL", False)):
        engine = sqlite_engine(
            f"sqlite:///{tmp_path / synchronous}.sqlite", synchronous=synchronous
        )
        with engine.begin() as c:
            c.exec_driver_sql("CREATE TABLE t (k INTEGER PRIMARY KEY)")
        connection = engine.connect()
        marked = hold(connection)
        assert marked is not None and marked.commits_held is held_commit
        ran.clear()
        with connection.begin():
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            connection.exec_driver_sql("INSERT INTO t (k) VALUES (?)", (1,))
        assert not marked.in_transaction
        assert ran == (["INSERT", "COMMIT"] if held_commit else ["INSERT"])
        with engine.connect() as other:
            assert other.exec_driver_sql("SELECT count(*) FROM t").scalar() == 1
        release(connection)
        connection.close()
        engine.dispose()


def test_the_loop_s_claims_write_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = counting(monkeypatch)
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    store.create_session("s")
    claims = LoopClaims(store)
    assert claims.claim("s", lambda _c, turn: turn) == 0
    assert ran[0] == "BEGIN" and ran[-1] == "COMMIT" and "UPDATE" in ran
    assert store.claim_turn("s", lambda _c, turn: turn) == 1  # committed
    claims.close()
    store.close()


def test_a_batch_of_events_written_held_is_stored_as_the_driver_stores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held, a batch's rows are one JSON parameter (``event_inserts.py``): the same values
    and types as the driver's statement stores."""
    ran = counting(monkeypatch)
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    for name in ("held", "driver"):
        store.create_session(name)
    batch = [
        EventRow(workflow_id="w", body_seq=3, step_key='k "quoted"', attempt=2**40, payload="{}"),
        EventRow(workflow_id=None, body_seq=None, step_key=None, attempt=None, payload='"é\n\\"'),
    ]
    with store.engine.connect() as connection:
        assert hold(connection) is not None
        with connection.begin():
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            insert_events(connection, "held", 5, batch)
        release(connection)
    assert ran == ["INSERT", "COMMIT"]  # (its BEGIN was the driver's)
    store.append_events("driver", 5, batch)
    columns = "idx, workflow_id, body_seq, step_key, attempt, payload"
    typed = ", ".join(f"typeof({name})" for name in columns.split(", "))
    with store.engine.connect() as c:
        found = {
            name: c.exec_driver_sql(
                f"SELECT {columns}, {typed} FROM eve_events WHERE session_id = ? ORDER BY idx",
                (name,),
            ).all()
            for name in ("held", "driver")
        }
    assert [tuple(r) for r in found["held"]] == [tuple(r) for r in found["driver"]]
    assert [r[0] for r in found["held"]] == [5, 6]
    assert store.read_events("held", 5) == ["{}", '"é\n\\"']
    store.close()
