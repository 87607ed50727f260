"""The worker's threads: a request never queues behind the turns' work."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from dbos._dbos import _get_dbos_instance

from eve.sessions.after_answer import after_answer
from eve.sessions.database_errors import fail_fast
from eve.sessions.pg_pools import BACKGROUND_POOL
from eve.sessions.store import SessionStore
from eve.sessions.thread_lanes import TURN_THREADS, LanedExecutor, store_call
from eve.sessions.writer_lane import WriterLane
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer


def test_a_request_runs_while_every_thread_of_the_turns_is_busy() -> None:
    release = threading.Event()

    async def scenario() -> str:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(LanedExecutor(ThreadPoolExecutor(max_workers=2)))
        # the turns' pool, full, and more of their work queued behind it
        busy = [asyncio.create_task(asyncio.to_thread(release.wait)) for _ in range(4)]
        await asyncio.sleep(0)
        with fail_fast():
            name = await asyncio.wait_for(
                asyncio.to_thread(lambda: threading.current_thread().name), timeout=10
            )
        release.set()
        await asyncio.gather(*busy)
        return name

    try:
        assert asyncio.run(scenario()).startswith("eve-request")
    finally:
        release.set()


def test_what_a_request_leaves_behind_runs_on_the_turns_pool() -> None:
    async def scenario() -> str:
        asyncio.get_running_loop().set_default_executor(
            LanedExecutor(ThreadPoolExecutor(max_workers=1, thread_name_prefix="turns"))
        )
        with fail_fast(), after_answer():
            return await asyncio.to_thread(lambda: threading.current_thread().name)

    assert asyncio.run(scenario()).startswith("turns")


def test_a_worker_lanes_its_requests(make_app: AppFactory) -> None:
    server = InProcessServer(scripted_app(make_app, [say("hi")])).start()
    try:
        session = server.create("hello")
        server.wait_for(session, count("session.waiting"))
        lanes = _get_dbos_instance()._executor_field
        assert isinstance(lanes, LanedExecutor)
        assert lanes.background._max_workers == TURN_THREADS  # bounded, not DBOS's own
    finally:
        server.stop()


def test_the_stores_reads_and_the_turns_writes_have_lanes_of_their_own(tmp_path: Path) -> None:
    """On SQLite a read takes a few threads of its own (it never waits for the writer), and
    the turns' writes one thread that runs them in turn (they would queue at the gate); a
    request's write keeps the requests' lane, and goes first at the gate."""
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")

    def thread_name(_c: object) -> str:
        return threading.current_thread().name

    async def scenario() -> list[str]:
        executor = LanedExecutor(ThreadPoolExecutor(max_workers=2, thread_name_prefix="turns"))
        asyncio.get_running_loop().set_default_executor(executor)
        names = [
            await asyncio.to_thread(store.read, thread_name),
            *await asyncio.gather(*(asyncio.to_thread(store.run, thread_name) for _ in range(20))),
            await asyncio.to_thread(lambda: threading.current_thread().name),
        ]
        with fail_fast():
            names.append(await asyncio.to_thread(store.run, thread_name))
        assert executor.writes.ran == 20
        executor.shutdown()
        return names

    try:
        read, *writes, other, request = asyncio.run(scenario())
    finally:
        store.close()
    assert read.startswith("eve-read")
    assert set(writes) == {"eve-writer"}
    assert other.startswith("turns")
    assert request.startswith("eve-request")


def test_what_is_a_store_call(tmp_path: Path) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    try:
        context = contextvars.copy_context()
        assert store_call(functools.partial(context.run, store.get_session, "s")) == (
            "read",
            store,
        )
        appending = functools.partial(context.run, store.append_events, "s", 0, [])
        assert store_call(appending) == ("write", store)
        saving = functools.partial(store.save_checkpoint, "s", None)
        assert store_call(functools.partial(context.run, saving)) == ("write", store)
        assert store_call(functools.partial(context.run, store.claim_turn, "s")) == (
            "alone",
            store,
        )
        assert store_call(functools.partial(context.run, print, "s")) is None
        store.gate = None  # as on PostgreSQL: no gate, the pool's lane
        assert store_call(appending) == ("pooled", store)
    finally:
        store.close()


def test_on_postgres_the_turns_store_calls_take_one_thread_a_connection(
    postgres_url: str,
) -> None:
    """More calls than the pool has connections run on as many threads as it has: the
    rest wait in the lane's queue, not as threads asleep in the pool."""
    store = SessionStore("postgresql+psycopg://" + postgres_url.split("://", 1)[1])
    release = threading.Event()
    running: set[str] = set()

    def hold(_c: object) -> str:
        running.add(threading.current_thread().name)
        release.wait(10)
        return threading.current_thread().name

    async def scenario() -> set[str]:
        executor = LanedExecutor(ThreadPoolExecutor(max_workers=64, thread_name_prefix="turns"))
        asyncio.get_running_loop().set_default_executor(executor)
        calls = [asyncio.create_task(asyncio.to_thread(store.run, hold)) for _ in range(20)]
        while len(running) < BACKGROUND_POOL:
            await asyncio.sleep(0.01)
        # every connection is taken and the lane's threads with them: the rest queue
        assert executor.pooled._work_queue.qsize() == 20 - BACKGROUND_POOL
        release.set()
        names = set(await asyncio.gather(*calls))
        executor.shutdown()
        return names

    try:
        names = asyncio.run(scenario())
    finally:
        release.set()
        store.close()
    assert len(names) == BACKGROUND_POOL and all(n.startswith("eve-pg") for n in names)


def test_the_writer_lane_runs_what_was_queued_before_it_shut_down() -> None:
    lane = WriterLane()
    release = threading.Event()
    order: list[int] = []
    first = lane.submit(release.wait)
    queued = [lane.submit(functools.partial(order.append, n)) for n in range(3)]
    lane.shutdown(wait=False)
    with pytest.raises(RuntimeError, match="after shutdown"):
        lane.submit(print)
    release.set()
    lane.shutdown(wait=True)
    assert first.result(0) is True and all(f.done() for f in queued)
    assert order == [0, 1, 2]
