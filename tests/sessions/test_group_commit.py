"""Group commit on SQLite: the writes the writer lane finds queued together share one
transaction (no savepoints: a failure undoes the group and each write runs again alone), and
no caller hears of its write before it is durable."""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions import wal_checkpoints
from eve.sessions.database_errors import fail_fast
from eve.sessions.store import EventRow, SessionStore
from eve.sessions.writer_lane import WriterLane


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    made = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    for name in ("a", "b", "c"):
        made.create_session(name)
    try:
        yield made
    finally:
        made.close()


def row(text: str) -> EventRow:
    return EventRow(workflow_id=None, body_seq=None, step_key=None, attempt=None, payload=text)


def commits(store: SessionStore) -> list[int]:
    counted = [0]

    def commit(_conn: Any) -> None:
        counted[0] += 1

    sa.event.listen(store.engine, "commit", commit)
    return counted


class Held:
    """A writer lane whose thread is busy until ``release``: what is queued meanwhile
    is found queued together."""

    def __init__(self, lane: WriterLane) -> None:
        self.lane = lane
        self._gate = threading.Event()
        self.blocker = lane.submit(self._gate.wait)

    def write(self, store: SessionStore, method: Callable[..., Any], *args: Any) -> Future[Any]:
        return self.lane.write(functools.partial(method, *args), joins=store)

    def release(self) -> None:
        self._gate.set()
        assert self.blocker.result(10) is True


def payloads(store: SessionStore, session_id: str) -> list[str]:
    """The session's log, as another connection (another process's) sees it."""
    path = store.engine.url.database
    assert path is not None
    reader = sqlite3.connect(path)
    try:
        found = reader.execute(
            "SELECT payload FROM eve_events WHERE session_id = ? ORDER BY idx", (session_id,)
        ).fetchall()
    finally:
        reader.close()
    return [text for (text,) in found]


def test_writes_queued_together_are_one_transaction_and_alone_costs_no_more(
    store: SessionStore,
) -> None:
    lane = WriterLane(most=4)
    counted = commits(store)
    held = Held(lane)
    futures = [
        held.write(store, store.append_events, name, index, [row(f"{name}{index}")])
        for index in range(2)
        for name in ("a", "b", "c")
    ]
    held.release()
    assert [f.result(10) for f in futures] == [[]] * 6
    # six writes: a group of the most (4), then the two left
    assert lane.groups == {1: 1, 4: 1, 2: 1}
    assert counted[0] == 2
    assert payloads(store, "a") == ["a0", "a1"]
    assert payloads(store, "c") == ["c0", "c1"]
    # a write found alone: its own transaction, as before grouping
    alone = lane.write(functools.partial(store.append_events, "a", 2, [row("a2")]), joins=store)
    assert alone.result(10) == []
    assert lane.groups == {1: 2, 4: 1, 2: 1}
    assert counted[0] == 3
    lane.shutdown()


def test_a_write_that_fails_undoes_the_group_and_each_runs_again_alone(
    store: SessionStore,
) -> None:
    """Only the writes that fail alone fail: the others commit, as if never grouped."""
    lane = WriterLane()
    held = Held(lane)

    def then_fail(c: Connection) -> None:
        c.execute(sa.text("UPDATE eve_sessions SET status = 'ended' WHERE id = 'b'"))
        raise ValueError("refused after its write")

    first = held.write(store, store.append_events, "a", 0, [row("first")])
    taken = held.write(store, store.append_events, "a", 0, [row("taken index")])
    undone = held.write(store, store.run, then_fail)
    last = held.write(store, store.append_events, "c", 0, [row("last")])
    held.release()
    assert first.result(10) == [] and last.result(10) == []
    with pytest.raises(sa.exc.IntegrityError):
        taken.result(10)
    with pytest.raises(ValueError, match="refused after its write"):
        undone.result(10)
    assert lane.groups == {1: 5}  # the blocker, then the four again, alone
    assert payloads(store, "a") == ["first"]
    assert payloads(store, "c") == ["last"]
    session = store.get_session("b")
    assert session is not None and session.status == "active"
    lane.shutdown()


def test_no_caller_hears_of_its_write_before_another_connection_sees_it(
    store: SessionStore,
) -> None:
    lane = WriterLane()
    held = Held(lane)
    seen: dict[str, list[str]] = {}
    futures = []
    for name in ("a", "b", "c"):
        future = held.write(store, store.append_events, name, 0, [row(f"{name}'s")])
        # run in the lane's thread the moment the future completes
        future.add_done_callback(lambda _f, name=name: seen.update({name: payloads(store, name)}))
        futures.append(future)
    held.release()
    lane.shutdown()  # (a future's callbacks run just after its result is set)
    assert all(future.done() for future in futures)
    assert lane.groups[3] == 1
    assert seen == {"a": ["a's"], "b": ["b's"], "c": ["c's"]}


def test_a_commit_that_fails_runs_each_write_again_alone(store: SessionStore) -> None:
    """A deferred foreign key fails the group's COMMIT: nothing of it is durable, and each
    write runs again alone, so only the one that broke it fails, at its own commit."""
    store.engine.dispose()
    sa.event.listen(
        store.engine, "connect", lambda dbapi, _record: dbapi.execute("PRAGMA foreign_keys=ON")
    )
    store.run(
        lambda c: c.exec_driver_sql(
            "CREATE TABLE kids (id INTEGER PRIMARY KEY, parent TEXT "
            "REFERENCES eve_sessions(id) DEFERRABLE INITIALLY DEFERRED)"
        )
    )
    counted = commits(store)
    lane = WriterLane()
    held = Held(lane)
    before = held.write(store, store.append_events, "a", 0, [row("before")])
    orphan = held.write(
        store, store.run, lambda c: c.exec_driver_sql("INSERT INTO kids (parent) VALUES ('none')")
    )
    after = held.write(store, store.append_events, "b", 0, [row("after")])
    held.release()
    assert before.result(10) == [] and after.result(10) == []
    with pytest.raises(sa.exc.IntegrityError, match="FOREIGN KEY"):
        orphan.result(10)
    assert lane.groups == {1: 4}  # the blocker, then the three again, alone
    assert payloads(store, "a") == ["before"]
    assert payloads(store, "b") == ["after"]
    # the group's commit and each write's own, the orphan's failing too
    assert counted[0] == 4
    lane.shutdown()


def test_a_fault_in_a_group_is_waited_out_by_each_write_alone(store: SessionStore) -> None:
    """A transient fault breaks the group (it is not waited out with the file held), and
    alone each write retries it as it always did (``db_retry.py``): none lost, none twice."""
    left = [1]

    def refuse(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.startswith("INSERT INTO eve_events") and left[0] > 0:
            left[0] -= 1
            raise sqlite3.OperationalError("unable to open database file")

    sa.event.listen(store.engine, "before_cursor_execute", refuse)
    lane = WriterLane()
    held = Held(lane)
    futures = [
        held.write(store, store.append_events, name, 0, [row(name)]) for name in ("a", "b", "c")
    ]
    held.release()
    assert [f.result(10) for f in futures] == [[]] * 3
    assert left == [0]
    assert lane.groups == {1: 4}
    assert [payloads(store, name) for name in ("a", "b", "c")] == [["a"], ["b"], ["c"]]
    lane.shutdown()


def test_a_write_that_must_not_run_twice_is_never_grouped(store: SessionStore) -> None:
    lane = WriterLane()
    held = Held(lane)
    grouped = [held.write(store, store.append_events, "a", i, [row(str(i))]) for i in range(2)]
    alone = lane.submit(store.create_session, "d")
    more = [held.write(store, store.append_events, "b", i, [row(str(i))]) for i in range(2)]
    cancelled = held.write(store, store.append_events, "c", 0, [row("never")])
    assert cancelled.cancel()
    held.release()
    for future in [*grouped, alone, *more]:
        future.result(10)
    # the order kept: a group never takes a write from behind another
    assert lane.groups == {1: 2, 2: 2}
    assert lane.ran == 6
    assert payloads(store, "c") == []
    lane.shutdown()


def test_a_group_runs_no_statement_but_its_writes_begin_and_commit(store: SessionStore) -> None:
    """No savepoint statements: each would let go of the interpreter's lock with the file
    held (``group_commit.py``); nor are the busy handler's PRAGMAs run with the gate held."""
    statements: list[str] = []
    gated: list[str] = []
    assert store.gate is not None
    gate = store.gate

    def run(text: str) -> None:
        statements.append(text)
        if gate._holder == threading.get_ident():
            gated.append(text.split(maxsplit=1)[0].upper())

    def trace(dbapi: Any, _record: Any) -> None:
        dbapi.set_trace_callback(run)

    store.engine.dispose()
    sa.event.listen(store.engine, "connect", trace)
    lane = WriterLane()
    held = Held(lane)
    futures = [
        held.write(store, store.append_events, name, 0, [row(name)]) for name in ("a", "b", "c")
    ]
    held.release()
    assert [f.result(10) for f in futures] == [[]] * 3
    assert lane.groups[3] == 1
    verbs = [text.split()[0].upper() for text in statements if not text.startswith("PRAGMA")]
    # the three writes' rows in one INSERT (``group_inserts.py``)
    assert verbs == ["BEGIN", "INSERT", "COMMIT"]
    assert gated == verbs
    lane.shutdown()


def test_a_write_that_catches_its_transactions_error_is_still_undone(
    store: SessionStore,
) -> None:
    """A method that goes on after its transaction raised: alone that transaction was rolled
    back, so in a group the whole group is undone rather than commit its first statement."""
    lane = WriterLane()
    held = Held(lane)

    def half_then_caught() -> str:
        try:
            store.run(
                lambda c: (
                    c.execute(sa.text("UPDATE eve_sessions SET status = 'ended' WHERE id = 'b'")),
                    c.execute(sa.text("INSERT INTO eve_sessions (id) VALUES ('a')")),
                )
            )
        except sa.exc.IntegrityError:
            return "caught"
        return "not raised"

    caught = held.lane.write(half_then_caught, joins=store)
    after = held.write(store, store.append_events, "c", 0, [row("after")])
    held.release()
    assert caught.result(10) == "caught"
    assert after.result(10) == []
    assert lane.groups == {1: 3}  # the blocker, then the two again, alone
    session = store.get_session("b")
    assert session is not None and session.status == "active"
    assert payloads(store, "c") == ["after"]
    lane.shutdown()


def test_a_write_that_raises_outside_its_transactions_keeps_the_group(
    store: SessionStore,
) -> None:
    lane = WriterLane()
    held = Held(lane)
    before = held.write(store, store.append_events, "a", 0, [row("before")])
    refused = held.lane.write(lambda: int("not a number"), joins=store)
    after = held.write(store, store.append_events, "c", 0, [row("after")])
    held.release()
    assert before.result(10) == [] and after.result(10) == []
    with pytest.raises(ValueError):
        refused.result(10)
    assert lane.groups == {1: 1, 3: 1}
    assert payloads(store, "a") == ["before"] and payloads(store, "c") == ["after"]
    lane.shutdown()


def test_a_group_commits_early_for_a_request_and_runs_the_rest_after_it(
    store: SessionStore,
) -> None:
    """A request's write waits for the write running, not for the whole group."""
    lane = WriterLane()
    held = Held(lane)
    order: list[str] = []
    running, go_on = threading.Event(), threading.Event()

    def first(c: Connection) -> None:
        order.append("first")
        running.set()
        assert go_on.wait(10)

    def request() -> None:
        with fail_fast():
            store.run(lambda c: order.append("request"))

    futures = [held.write(store, store.run, first)]
    futures += [
        held.write(store, store.run, lambda c, name=name: order.append(name))
        for name in ("second", "third")
    ]
    held.release()
    assert running.wait(10)
    waiting = threading.Thread(target=request)
    waiting.start()
    assert store.gate is not None
    while not store.gate.requests_waiting:  # the request is at the gate: no sleep to tune
        assert waiting.is_alive()
        threading.Event().wait(0.001)
    go_on.set()
    waiting.join(10)
    for future in futures:
        future.result(10)
    assert order == ["first", "request", "second", "third"]
    assert lane.groups == {1: 2, 2: 1}  # the blocker, the first write's group, the rest's
    lane.shutdown()


def test_a_group_waits_for_another_process_lock_in_short_pauses(store: SessionStore) -> None:
    """Another process holds the file: the group's BEGIN tries again after short pauses of
    its own (no busy handler), then commits, and its connection gets its busy handler back."""
    path = store.engine.url.database
    assert path is not None
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    lane = WriterLane()
    held = Held(lane)
    futures = [held.write(store, store.append_events, n, 0, [row(n)]) for n in ("a", "b")]
    tries: list[str] = []

    def trace(dbapi: Any, _record: Any) -> None:
        dbapi.set_trace_callback(tries.append)

    store.engine.dispose()
    sa.event.listen(store.engine, "connect", trace)
    held.release()
    # the group is refused at least once before the other process lets go
    while tries.count("BEGIN IMMEDIATE") < 2:
        assert not any(f.done() for f in futures)
        threading.Event().wait(0.001)
    other.execute("COMMIT")
    assert [f.result(10) for f in futures] == [[], []]
    assert lane.groups == {1: 1, 2: 1}
    with store.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
    other.close()
    lane.shutdown()


def test_groups_run_on_one_kept_connection_whose_busy_handler_stays_off(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The handler is switched off once, not off and on again around each group (the pool's
    connections keep theirs); a fault gives the connection up and the next group opens one."""
    # the process's WAL checkpoint thread takes a connection of the pool when the file's WAL
    # grew, which the pool may then hand the lane: paused, so the lane's own are counted
    monkeypatch.setattr(wal_checkpoints.CHECKPOINTS, "run_once", lambda: True)
    run: list[str] = []
    opened: list[object] = []

    def trace(dbapi: Any, _record: Any) -> None:
        opened.append(dbapi)
        dbapi.set_trace_callback(run.append)

    store.engine.dispose()
    sa.event.listen(store.engine, "connect", trace)
    lane = WriterLane()
    for round_ in range(3):
        held = Held(lane)
        futures = [
            held.write(store, store.append_events, name, round_, [row(f"{name}{round_}")])
            for name in ("a", "b")
        ]
        held.release()
        assert [f.result(10) for f in futures] == [[], []]
    assert lane.groups[2] == 3
    assert len(opened) == 1
    assert [s for s in run if s.startswith("PRAGMA busy_timeout")] == ["PRAGMA busy_timeout=0"]
    assert payloads(store, "a") == ["a0", "a1", "a2"]
    held = Held(lane)  # a group that breaks: its connection is not trusted again
    broken = held.write(store, store.append_events, "a", 0, [row("taken")])
    fine = held.write(store, store.append_events, "b", 3, [row("b3")])
    held.release()
    with pytest.raises(sa.exc.IntegrityError):
        broken.result(10)
    assert fine.result(10) == []
    held = Held(lane)
    futures = [held.write(store, store.append_events, n, 4, [row(f"{n}4")]) for n in ("a", "b")]
    held.release()
    assert [f.result(10) for f in futures] == [[], []]
    # the pool's connection opened again for the two that ran alone, then kept for groups
    assert len(opened) == 2
    switched = [s for s in run if s.startswith("PRAGMA busy_timeout")]
    assert switched == ["PRAGMA busy_timeout=0"] * 2
    with store.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
    lane.shutdown()
