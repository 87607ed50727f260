"""The SQLite gate: one transaction at a time in the process, a request's first, and a
thread that holds it may enter again; an engine whose transactions another library opens
(DBOS's) has its writes gated too."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from eve._sql_engines import sqlite_engine
from eve.sessions.database_errors import fail_fast
from eve.sessions.sqlite_gate import SqliteGate, claims_first, gate_writes


def _held_until(gate: SqliteGate, order: list[str], release: threading.Event) -> threading.Thread:
    """A thread holding ``gate`` (once it has, ``order`` is ``["holder"]``) until
    ``release``."""

    def holder() -> None:
        with gate.held():
            order.append("holder")
            release.wait(10)

    first = threading.Thread(target=holder)
    first.start()
    while order != ["holder"]:
        time.sleep(0.001)
    return first


def test_a_waiting_request_goes_before_waiting_background_work() -> None:
    gate = SqliteGate()
    order: list[str] = []
    release = threading.Event()

    def background() -> None:
        with gate.held():
            order.append("background")

    def request() -> None:
        with fail_fast(), gate.held():
            order.append("request")

    first = _held_until(gate, order, release)
    waiting = [threading.Thread(target=background), threading.Thread(target=request)]
    waiting[0].start()
    while gate.waited < 1:  # the background one waits first
        time.sleep(0.001)
    waiting[1].start()
    while gate.waited < 2:
        time.sleep(0.001)
    release.set()
    for thread in [first, *waiting]:
        thread.join(10)
    assert order == ["holder", "request", "background"]


def test_a_claim_that_waited_goes_before_a_request_s_other_transactions() -> None:
    """A message's claim that found the file taken (``claims_first``) goes before the
    other waiting requests' transactions (a stream's reads), which go before the
    background's."""
    gate = SqliteGate()
    order: list[str] = []
    release = threading.Event()

    def waiter(name: str) -> None:
        with contextlib.ExitStack() as stack:
            if name != "background":
                stack.enter_context(fail_fast())
            if name == "claim":
                stack.enter_context(claims_first())
            with gate.held():
                order.append(name)

    first = _held_until(gate, order, release)
    waiting = []
    for n, name in enumerate(("background", "read", "claim"), start=1):
        waiting.append(threading.Thread(target=waiter, args=(name,)))
        waiting[-1].start()
        while gate.waited < n:  # each waits before the next comes
            time.sleep(0.001)
    release.set()
    for thread in [first, *waiting]:
        thread.join(10)
    assert order == ["holder", "claim", "read", "background"]


def test_the_holder_may_enter_again() -> None:
    gate = SqliteGate()
    with gate.held(), gate.held():
        entered = True
    assert entered
    with gate.held():  # and it was let go
        pass


def _gated(tmp_path: Path, *, patience: float = 10.0) -> tuple[Engine, SqliteGate]:
    engine = sqlite_engine(f"sqlite:///{tmp_path / 'dbos.sqlite'}", busy_timeout=10.0)
    gate = SqliteGate()
    gate_writes(engine, gate, patience=patience, busy_timeout=10.0)
    with engine.begin() as c:
        c.execute(sa.text("CREATE TABLE t (n INTEGER)"))
    return engine, gate


def test_a_write_transaction_another_library_opens_waits_on_the_gate(tmp_path: Path) -> None:
    engine, gate = _gated(tmp_path)
    holding, release = threading.Event(), threading.Event()

    def first() -> None:
        with engine.begin() as c:
            c.execute(sa.text("INSERT INTO t VALUES (1)"))
            holding.set()
            release.wait(10)

    def second() -> None:
        with engine.begin() as c:
            c.execute(sa.text("SELECT count(*) FROM t")).scalar()  # a read passes freely
            c.execute(sa.text("INSERT INTO t VALUES (2)"))

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    holding.wait(10)
    threads[1].start()
    while gate.waited < 1:  # on the gate, not asleep in SQLite's busy handler
        time.sleep(0.001)
    release.set()
    for thread in threads:
        thread.join(10)
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT n FROM t ORDER BY n")).scalars().all() == [1, 2]
    engine.dispose()


def test_the_gate_is_let_go_when_a_write_fails_or_rolls_back(tmp_path: Path) -> None:
    engine, gate = _gated(tmp_path)
    with pytest.raises(sa.exc.OperationalError), engine.begin() as c:
        c.execute(sa.text("INSERT INTO t VALUES (1)"))
        c.execute(sa.text("INSERT INTO missing VALUES (1)"))
    with engine.connect() as c:
        c.execute(sa.text("INSERT INTO t VALUES (2)"))
        c.rollback()
    assert gate._acquire(urgent=False, patience=0.0)  # free: nothing kept it
    gate._release()
    engine.dispose()


def test_a_write_goes_on_to_sqlite_once_its_patience_runs_out(tmp_path: Path) -> None:
    engine, gate = _gated(tmp_path, patience=0.05)
    taken = threading.Event()
    release = threading.Event()

    def hold() -> None:  # holds the gate only, not the file
        with gate.held():
            taken.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait(10)
    with engine.begin() as c:
        c.execute(sa.text("INSERT INTO t VALUES (1)"))
    release.set()
    holder.join(10)
    engine.dispose()


def test_a_gated_write_waits_for_another_process_lock_in_short_pauses(tmp_path: Path) -> None:
    """Another process holds the file: the write's BEGIN is tried again after short pauses
    of its own, not SQLite's busy handler, and the connection gets its handler back."""
    engine, _gate = _gated(tmp_path)
    tries: list[str] = []
    engine.dispose()
    sa.event.listen(engine, "connect", lambda dbapi, _r: dbapi.set_trace_callback(tries.append))
    other = sqlite3.connect(tmp_path / "dbos.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")

    def write() -> None:
        with engine.begin() as c:
            c.execute(sa.text("INSERT INTO t VALUES (1)"))

    writer = threading.Thread(target=write)
    writer.start()
    while tries.count("BEGIN IMMEDIATE") < 2:  # refused at least once meanwhile
        assert writer.is_alive()
        time.sleep(0.001)
    other.execute("COMMIT")
    writer.join(10)
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT n FROM t")).scalars().all() == [1]
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 10_000
    other.close()
    engine.dispose()


def test_the_gate_is_held_until_the_commit_or_rollback_ran(tmp_path: Path) -> None:
    """Let go before the ``COMMIT`` ran, the gate let the next writer in while the file was
    still locked, and its ``BEGIN IMMEDIATE`` was refused and paused."""
    engine, gate = _gated(tmp_path)
    engine.dispose()
    held_at: dict[str, bool] = {}

    def trace(statement: str) -> None:
        held_at[statement] = gate._holder == threading.get_ident()

    sa.event.listen(engine, "connect", lambda dbapi, _r: dbapi.set_trace_callback(trace))
    with engine.begin() as c:
        c.execute(sa.text("INSERT INTO t VALUES (1)"))
    with engine.connect() as c:
        c.execute(sa.text("INSERT INTO t VALUES (2)"))
        c.rollback()
    assert held_at["COMMIT"] and held_at["ROLLBACK"]
    assert gate._holder is None  # and let go once they ran
    engine.dispose()


def test_a_connection_s_busy_handler_is_switched_only_when_its_use_changes(
    tmp_path: Path,
) -> None:
    """Off at its first write and left off for the next (no ``PRAGMA`` per transaction, as
    when the pool took it back); on again before a read outside a transaction, which waits
    in SQLite's busy handler as it always did."""
    engine, _gate = _gated(tmp_path)
    engine.dispose()
    run: list[str] = []
    opened: list[object] = []

    def trace(dbapi: sqlite3.Connection, _record: object) -> None:
        opened.append(dbapi)
        dbapi.set_trace_callback(run.append)

    sa.event.listen(engine, "connect", trace)

    def switches() -> list[str]:
        return [s for s in run if s.startswith("PRAGMA busy_timeout=")]

    for n in range(3):  # the pool's one connection, given back after each
        with engine.begin() as c:
            c.execute(sa.text("INSERT INTO t VALUES (:n)"), {"n": n})
    assert len(opened) == 1
    assert run.count("BEGIN IMMEDIATE") == 3
    assert switches() == ["PRAGMA busy_timeout=0"]
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT count(*) FROM t")).scalar() == 3
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 10_000
    with engine.begin() as c:
        c.execute(sa.text("INSERT INTO t VALUES (3)"))
    assert len(opened) == 1
    assert switches() == [
        "PRAGMA busy_timeout=0",
        "PRAGMA busy_timeout=10000",
        "PRAGMA busy_timeout=0",
    ]
    engine.dispose()
