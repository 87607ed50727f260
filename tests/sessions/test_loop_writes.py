"""The turns' groupable writes on the event loop's thread (``eve/sessions/loop_writes.py``):
committed there in groups when eve's SQLite file is free at once, tried again between
slices while it is not, and anything else left to the writer lane's thread, in order."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from dbos._dbos import _get_dbos_instance
from sqlalchemy.engine import Connection

from eve.errors import ServerConfigError
from eve.server.serving_loop import ServingLoop, new_serving_loop
from eve.sessions.loop_writes import LoopWrites
from eve.sessions.settings import LOOP_WRITES_ENV, loop_writes, resolve_settings
from eve.sessions.store import SessionStore
from eve.sessions.thread_lanes import LanedExecutor, sliced_loop
from eve.sessions.writer_lane import WriterLane
from tests.conftest import AppFactory
from tests.sessions import test_group_inserts
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_claim_now import held_by_another_process, held_by_another_thread
from tests.sessions.test_group_commit import payloads, row

LOOP = "MainThread"
#: a store with sessions ``a`` and ``b`` (the fixture of the group inserts' tests)
store = test_group_inserts.store


@pytest.fixture
def lane() -> Iterator[WriterLane]:
    made = WriterLane()
    yield made
    made.shutdown()


@pytest.fixture
def ran(store: SessionStore) -> Ran:
    return Ran(store)


class Ran:
    """Store writes that say where they ran, in the order they ran."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.order: list[tuple[str, str]] = []

    def write(self, name: str, *, fail: bool = False) -> Callable[[], Any]:
        def work(c: Connection) -> str:
            self.order.append((name, threading.current_thread().name))
            c.execute(sa.text("UPDATE eve_sessions SET status = :s WHERE id = 'a'"), {"s": name})
            if fail:
                raise ValueError(f"{name} refused")
            return name

        return functools.partial(self.store.run, work)

    def where(self, name: str) -> set[str]:
        return {thread for ran, thread in self.order if ran == name}


def on_a_serving_loop(
    scenario: Callable[[ServingLoop], Any], *, each_slice: Callable[[int], object] | None = None
) -> Any:
    """``scenario(loop)`` on a ``ServingLoop`` of one callback a slice, while the turns'
    work keeps it slicing: a callback that queues itself again, ``each_slice`` called with
    the number of each of its runs."""
    loop = ServingLoop(0.0, watch=None)
    ended = threading.Event()

    def tick(n: int) -> None:
        if each_slice is not None:
            each_slice(n)
        if not ended.is_set():
            loop.call_soon(tick, n + 1)

    async def main() -> Any:
        loop.call_soon(tick, 0)
        try:
            return await scenario(loop)
        finally:
            ended.set()

    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def three(writes: LoopWrites, ran: Ran, store: SessionStore) -> list[Future[Any]]:
    """Three writes of ``ran``'s, ``w0`` to ``w2``, queued on the loop's side."""
    return [writes.write(ran.write(f"w{n}"), joins=store) for n in range(3)]


async def until(done: Callable[[], bool]) -> None:
    while not done():
        await asyncio.sleep(0.001)


async def results(futures: list[Future[Any]]) -> list[Any]:
    return list(
        await asyncio.gather(*(asyncio.wrap_future(f) for f in futures), return_exceptions=True)
    )


def test_writes_commit_in_groups_on_the_loop_and_their_callers_get_results(
    store: SessionStore, lane: WriterLane, ran: Ran
) -> None:
    async def scenario(loop: ServingLoop) -> list[Any]:
        writes = LoopWrites(lane, loop, most=4)
        futures = [writes.write(ran.write(f"w{n}"), joins=store) for n in range(6)]
        futures.append(
            writes.write(functools.partial(store.append_events, "b", 0, [row("b0")]), joins=store)
        )
        found = await results(futures)
        assert writes.groups == {4: 1, 3: 1} and writes.ran == 7 and not writes.handed
        return found

    found = on_a_serving_loop(scenario)
    assert found == [f"w{n}" for n in range(6)] + [[]]
    assert {thread for _name, thread in ran.order} == {LOOP}
    assert payloads(store, "b") == ["b0"]
    session = store.get_session("a")
    assert session is not None and session.status == "w5"
    assert lane.ran == 0


def test_a_file_another_process_holds_is_tried_again_between_slices(
    store: SessionStore, tmp_path: Path, lane: WriterLane, ran: Ran
) -> None:
    with held_by_another_process(tmp_path / "eve.sqlite") as other:

        def release_at_the_tenth(n: int) -> None:
            if n == 10 and other.in_transaction:
                other.execute("ROLLBACK")

        async def scenario(loop: ServingLoop) -> tuple[list[Any], int]:
            writes = LoopWrites(lane, loop, retry=60.0)
            found = await results(three(writes, ran, store))
            return found, writes.not_now["file"]

        found, busy = on_a_serving_loop(scenario, each_slice=release_at_the_tenth)
    assert found == ["w0", "w1", "w2"]
    assert busy >= 2  # tried at the first callbacks and at pauses, until released
    assert {thread for _name, thread in ran.order} == {LOOP}


def test_writes_the_file_stays_taken_for_go_to_the_lane_after_their_time(
    store: SessionStore, tmp_path: Path, lane: WriterLane, ran: Ran
) -> None:
    with held_by_another_process(tmp_path / "eve.sqlite") as other:

        async def scenario(loop: ServingLoop) -> list[Future[Any]]:
            writes = LoopWrites(lane, loop, retry=0.0)
            futures = three(writes, ran, store)
            await until(lambda: writes.handed["waited"] == 3)
            assert writes.ran == 0
            return futures

        futures = on_a_serving_loop(scenario)
        other.execute("ROLLBACK")  # the lane waits for the file in its thread
        assert [f.result(10) for f in futures] == ["w0", "w1", "w2"]
    assert {thread for _name, thread in ran.order} == {"eve-writer"}
    assert lane.groups == {3: 1}


def test_another_thread_holding_the_gate_is_waited_for_between_slices(
    store: SessionStore, lane: WriterLane, ran: Ran
) -> None:
    assert store.gate is not None
    with held_by_another_thread(store.gate):

        async def scenario(loop: ServingLoop) -> list[Future[Any]]:
            writes = LoopWrites(lane, loop, retry=0.0)
            futures = [writes.write(ran.write("w0"), joins=store)]
            await until(lambda: writes.handed["waited"] == 1)
            return futures

        futures = on_a_serving_loop(scenario)
    assert futures[0].result(10) == "w0"
    assert ran.where("w0") == {"eve-writer"}


def test_a_write_that_raises_undoes_the_group_and_each_runs_alone_in_the_lane(
    store: SessionStore, lane: WriterLane, ran: Ran
) -> None:
    async def scenario(loop: ServingLoop) -> list[Any]:
        writes = LoopWrites(lane, loop)
        futures = [
            writes.write(ran.write("first"), joins=store),
            writes.write(ran.write("refused", fail=True), joins=store),
            writes.write(ran.write("last"), joins=store),
        ]
        found = await results(futures)
        assert writes.ran == 0 and writes.handed == {"undone": 3}
        return found

    first, refused, last = on_a_serving_loop(scenario)
    assert first == "first" and last == "last"
    assert isinstance(refused, ValueError) and str(refused) == "refused refused"
    # each once on the loop (undone), then alone in the lane
    assert [name for name, _thread in ran.order] == ["first", "refused", "first", "refused", "last"]
    assert ran.where("first") == {LOOP, "eve-writer"} and ran.where("last") == {"eve-writer"}
    assert lane.groups == {1: 3}
    session = store.get_session("a")
    assert session is not None and session.status == "last"


def test_writes_keep_their_order_across_the_loop_and_the_lane(
    store: SessionStore, lane: WriterLane, ran: Ran
) -> None:
    """A write the lane runs (one that must run alone, or one given it while the lane was
    busy) is never overtaken by a later one on the loop."""
    release = threading.Event()
    busy = lane.submit(release.wait)  # the lane busy with what came before

    async def scenario(loop: ServingLoop) -> list[Any]:
        writes = LoopWrites(lane, loop)
        futures = [writes.write(ran.write("w0"), joins=store)]
        futures.append(writes.alone(ran.write("alone")))
        futures.extend(writes.write(ran.write(f"w{n}"), joins=store) for n in (1, 2))
        await asyncio.sleep(0.05)
        assert ran.order == []  # all wait for the lane's earlier work
        release.set()
        return await results(futures)

    assert on_a_serving_loop(scenario) == ["w0", "alone", "w1", "w2"]
    assert busy.result(10) is True
    assert [name for name, _thread in ran.order] == ["w0", "alone", "w1", "w2"]
    assert ran.where("alone") == {"eve-writer"}
    assert ran.where("w0") == ran.where("w1") == {LOOP}


def test_closing_with_writes_queued_hands_them_to_the_lane(
    store: SessionStore, tmp_path: Path, lane: WriterLane, ran: Ran
) -> None:
    with held_by_another_process(tmp_path / "eve.sqlite") as other:

        async def scenario(loop: ServingLoop) -> list[Future[Any]]:
            writes = LoopWrites(lane, loop, retry=60.0)
            futures = three(writes, ran, store)
            await until(lambda: writes.not_now["file"] >= 1)
            # from another thread, as DBOS's destroy shuts the executor down
            await asyncio.to_thread(writes.close)
            assert writes.handed == {"closed": 3}
            late = writes.write(ran.write("late"), joins=store)  # the lane's from now on
            return [*futures, late]

        futures = on_a_serving_loop(scenario)
        other.execute("ROLLBACK")
        lane.shutdown(wait=True)
    assert [f.result(0) for f in futures] == ["w0", "w1", "w2", "late"]
    assert {thread for _name, thread in ran.order} == {"eve-writer"}


def test_a_cancelled_write_is_skipped(store: SessionStore, lane: WriterLane, ran: Ran) -> None:
    async def scenario(loop: ServingLoop) -> list[Any]:
        writes = LoopWrites(lane, loop)
        futures = three(writes, ran, store)
        assert futures[1].cancel()
        return await results([futures[0], futures[2]])

    assert on_a_serving_loop(scenario) == ["w0", "w2"]
    assert [name for name, _thread in ran.order] == ["w0", "w2"]


def test_the_setting_reads_on_and_off_and_refuses_the_rest(tmp_path: Path) -> None:
    assert loop_writes("") is True and loop_writes(" On ") is True
    assert loop_writes("off") is False
    with pytest.raises(ServerConfigError, match="EVE_LOOP_WRITES must be on or off"):
        loop_writes("sometimes")
    assert resolve_settings(tmp_path, env={}).loop_writes is True
    assert resolve_settings(tmp_path, env={LOOP_WRITES_ENV: "off"}).loop_writes is False
    postgres = {"EVE_DATABASE_URL": "postgresql://eve@localhost/eve"}
    assert resolve_settings(tmp_path, env=postgres).loop_writes is False


def test_only_a_serving_loop_runs_writes(store: SessionStore) -> None:
    async def on_asyncio() -> object:
        return sliced_loop()

    assert asyncio.run(on_asyncio()) is None

    async def on_serving(loop: ServingLoop) -> object:
        return sliced_loop()

    assert on_a_serving_loop(on_serving) is not None


def test_a_worker_runs_its_turns_writes_on_its_loop(make_app: AppFactory) -> None:
    server = InProcessServer(
        scripted_app(make_app, [say("one"), say("two")]), loop_factory=new_serving_loop
    ).start()
    try:
        session = server.create("hello")
        server.wait_for(session, count("session.waiting"))
        server.send(session, "again")
        server.wait_for(session, count("session.waiting", 2))
        lanes = _get_dbos_instance()._executor_field
        assert isinstance(lanes, LanedExecutor) and lanes.loop_writes is not None
        assert lanes.loop_writes.ran > 0
    finally:
        server.stop()


def test_with_the_setting_off_a_worker_leaves_its_writes_to_the_lane(
    make_app: AppFactory,
) -> None:
    server = InProcessServer(
        scripted_app(make_app, [say("one")]),
        loop_factory=new_serving_loop,
        env={LOOP_WRITES_ENV: "off"},
    ).start()
    try:
        session = server.create("hello")
        server.wait_for(session, count("session.waiting"))
        lanes = _get_dbos_instance()._executor_field
        assert isinstance(lanes, LanedExecutor) and lanes.loop_writes is None
        assert lanes.writes.ran > 0
    finally:
        server.stop()
