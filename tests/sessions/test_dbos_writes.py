"""DBOS's writes on SQLite, several threads' in one transaction when they meet: a write
alone costs what it did, a group is undone whole if any write of it raises and each runs
again alone, and a request's write never waits for a group."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from dbos import DBOS
from dbos._dbos import _get_dbos_instance
from sqlalchemy.engine import Connection, Engine

from eve.errors import StorageFailed
from eve.sessions.after_answer import after_answer
from eve.sessions.database_errors import fail_fast, failing_fast, storage_failed
from eve.sessions.dbos_writes import Combiner, _Write, combiner_of
from eve.sessions.sqlite import sqlite_engine
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.inprocess import InProcessServer


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    made = sqlite_engine(f"sqlite:///{tmp_path / 'dbos.sqlite'}", immediate=True)
    with made.begin() as c:
        c.execute(sa.text("CREATE TABLE t (n INTEGER UNIQUE)"))
    try:
        yield made
    finally:
        made.dispose()


def rows(engine: Engine) -> list[int]:
    with engine.connect() as c:
        return list(c.execute(sa.text("SELECT n FROM t ORDER BY n")).scalars())


def commits(engine: Engine) -> list[int]:
    counted = [0]

    def commit(_conn: Any) -> None:
        counted[0] += 1

    sa.event.listen(engine, "commit", commit)
    return counted


def insert(n: int) -> Callable[[Connection], int]:
    def write(c: Connection) -> int:
        c.execute(sa.text("INSERT INTO t VALUES (:n)"), {"n": n})
        return n

    return write


def alone(engine: Engine, n: int, ran: list[int] | None = None) -> Callable[[], int]:
    def write() -> int:
        if ran is not None:
            ran.append(n)
        with engine.begin() as c:
            return insert(n)(c)

    return write


class Blocked:
    """A write that runs alone (the first, with no one to meet) and holds the lead until
    ``release``: what comes meanwhile queues behind it."""

    def __init__(
        self, combiner: Combiner, pool: ThreadPoolExecutor, *, writes: bool = True
    ) -> None:
        self.started, self._release = threading.Event(), threading.Event()

        def held() -> int:
            self.started.set()
            self._release.wait(10)
            return alone(combiner.engine, 0)() if writes else 0

        self.future = pool.submit(combiner.run, insert(0), held)
        assert self.started.wait(10)

    def release(self) -> None:
        self._release.set()
        assert self.future.result(10) == 0


def queued(combiner: Combiner, pool: ThreadPoolExecutor, futures: list[Future[Any]]) -> None:
    """Until every future's write waits in the combiner's queue."""
    while len(combiner._queued) < len(futures):
        assert not any(f.done() for f in futures)
        threading.Event().wait(0.001)


def test_writes_that_meet_are_one_transaction(engine: Engine) -> None:
    combiner = Combiner(engine)
    counted = commits(engine)
    with ThreadPoolExecutor(4) as pool:
        blocked = Blocked(combiner, pool)
        futures = [pool.submit(combiner.run, insert(n), alone(engine, n)) for n in (1, 2, 3)]
        queued(combiner, pool, futures)
        blocked.release()
        assert [f.result(10) for f in futures] == [1, 2, 3]
    assert rows(engine) == [0, 1, 2, 3]
    assert combiner.groups == {3: 1}
    assert counted[0] == 2  # the first alone, the three others in one


def test_a_write_that_raises_undoes_its_group_and_each_runs_again_alone(engine: Engine) -> None:
    """The second write finds its value taken: nothing of the group stays, each runs alone,
    and only that write fails."""
    combiner = Combiner(engine)
    ran: list[int] = []
    with ThreadPoolExecutor(4) as pool:
        blocked = Blocked(combiner, pool)
        futures = [pool.submit(combiner.run, insert(n), alone(engine, n, ran)) for n in (1, 0, 2)]
        queued(combiner, pool, futures)
        blocked.release()
        assert futures[0].result(10) == 1
        with pytest.raises(sa.exc.IntegrityError):
            futures[1].result(10)
        assert futures[2].result(10) == 2
    assert sorted(ran) == [0, 1, 2]
    assert rows(engine) == [0, 1, 2]
    assert combiner.groups == {}


def test_a_request_s_write_waits_for_no_group(engine: Engine) -> None:
    combiner = Combiner(engine)
    with ThreadPoolExecutor(4) as pool:
        blocked = Blocked(combiner, pool)

        def request() -> int:
            with fail_fast():
                return combiner.run(insert(5), alone(engine, 5))

        assert pool.submit(request).result(10) == 5
        assert not blocked.future.done()
        blocked.release()
    assert rows(engine) == [0, 5]


def test_a_write_an_answered_request_left_behind_joins_a_group(engine: Engine) -> None:
    """Its turn's start (``after_answer``): nothing waits on it, so it meets the others."""
    combiner = Combiner(engine)
    counted = commits(engine)

    def left_behind(n: int) -> int:
        with fail_fast(), after_answer():
            return combiner.run(insert(n), alone(engine, n))

    with ThreadPoolExecutor(4) as pool:
        blocked = Blocked(combiner, pool)
        futures = [pool.submit(left_behind, n) for n in (1, 2)]
        queued(combiner, pool, futures)
        blocked.release()
        assert [f.result(10) for f in futures] == [1, 2]
    assert rows(engine) == [0, 1, 2]
    assert combiner.groups == {2: 1}
    assert counted[0] == 2


def test_a_left_behind_write_whose_group_fails_still_fails_fast(engine: Engine) -> None:
    """Run again alone, it keeps the request's rules: a locked file is refused at once
    (``StorageFailed``, which DBOS does not retry), not waited out."""
    combiner = Combiner(engine)
    tried: list[bool] = []

    def refused() -> int:
        tried.append(failing_fast())
        raise storage_failed("locked")

    def left_behind() -> int:
        with fail_fast(), after_answer():
            return combiner.run(insert(0), refused)  # 0 is taken: the group fails

    with ThreadPoolExecutor(4) as pool:
        blocked = Blocked(combiner, pool)
        futures = [pool.submit(left_behind), pool.submit(combiner.run, insert(3), alone(engine, 3))]
        queued(combiner, pool, futures)
        blocked.release()
        with pytest.raises(StorageFailed):
            futures[0].result(10)
        assert futures[1].result(10) == 3
    assert tried == [True]
    assert rows(engine) == [0, 3]
    assert combiner.groups == {}


def test_a_write_alone_runs_as_before(engine: Engine) -> None:
    combiner = Combiner(engine)
    counted = commits(engine)
    ran: list[int] = []
    assert combiner.run(insert(1), alone(engine, 1, ran)) == 1
    assert ran == [1]
    assert counted[0] == 1
    assert combiner.groups == {}


def test_a_write_that_raises_leaves_no_cycle(engine: Engine) -> None:
    """Its error is raised, not kept: a write held its error, whose traceback held the
    write, and the pair waited for a full collection (seen as garbage a turn left behind).
    (The error is a plain one: a driver's error keeps cycles of its own.)"""
    combiner = Combiner(engine)

    def refused() -> int:
        raise ValueError("refused")

    gc.collect()
    gc.disable()
    try:
        with contextlib.suppress(ValueError):
            combiner.run(insert(1), refused)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, _Write)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not left
    assert rows(engine) == []


@DBOS.workflow(name="tests.combined")
async def _combined(n: int) -> int:
    return n


async def _start_combined(first: int) -> list[int]:
    handles = await asyncio.gather(
        *(DBOS.start_workflow_async(_combined, n) for n in range(first, first + 3))
    )
    return list(await asyncio.gather(*(handle.get_result() for handle in handles)))


def test_dbos_starts_and_ends_that_meet_are_recorded_as_dbos_records_them(
    make_app: AppFactory,
) -> None:
    """Through DBOS itself on eve's SQLite file: three workflows whose starts (DBOS's
    ``_insert_workflow_status``, on the group's connection) and ends queue behind a write
    holding the lead run together, and DBOS reads back each one's status, input and
    output."""
    server = InProcessServer(scripted_app(make_app, [say("hello")]), env={}).start()
    try:
        sys_db = _get_dbos_instance()._sys_db
        combiner = combiner_of(sys_db.engine)
        before = dict(combiner.groups)
        assert server.http is not None
        portal = server.http.portal
        assert portal is not None
        with ThreadPoolExecutor(1) as pool, ThreadPoolExecutor(1) as caller:
            blocked = Blocked(combiner, pool, writes=False)
            started = caller.submit(portal.call, _start_combined, 100)
            while len(combiner._queued) < 3:  # the three starts wait behind it
                assert not started.done()
                threading.Event().wait(0.001)
            blocked.release()
            assert started.result(30) == [100, 101, 102]
        grouped = sum(n * (k - before.get(n, 0)) for n, k in combiner.groups.items())
        assert grouped >= 3  # the starts at least; the ends too when they met
        workflows = DBOS.list_workflows(name="tests.combined", load_input=True)
        found = sorted(
            (w.status, w.input["args"] if w.input else None, w.output) for w in workflows
        )
        assert found == [("SUCCESS", (n,), n) for n in (100, 101, 102)]
    finally:
        server.stop()


def test_a_combiner_keeps_no_engine_alive(tmp_path: Path) -> None:
    made = sa.create_engine(f"sqlite:///{tmp_path / 'gone.sqlite'}")
    combiner_of(made)
    gone = weakref.ref(made)
    made.dispose()
    del made
    gc.collect()
    assert gone() is None, "combiner_of kept its engine (and its pool) alive"
