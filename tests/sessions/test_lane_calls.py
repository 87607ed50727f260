"""``in_thread``: eve's calls of the turns reach their lane without the loop's executor, and
keep what ``asyncio.to_thread`` promised: the lane, its bound, the caller's context, the
exception raised, cancellation."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

import pytest
from dbos._dbos import _get_dbos_instance

from eve.sessions.database_errors import fail_fast
from eve.sessions.lane_calls import in_thread
from eve.sessions.lane_pool import LanePool
from eve.sessions.loop_replies import Answers, LoopReply
from eve.sessions.store import SessionStore
from eve.sessions.thread_lanes import LanedExecutor, served
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer

T = TypeVar("T")
_SEEN: ContextVar[str] = ContextVar("seen", default="unset")


class NoSubmits(LanedExecutor):
    """Lanes that fail a test if a call reaches them through the executor's ``submit``."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        raise AssertionError(f"submitted, not answered: {fn!r}")


def served_run(
    scenario: Callable[[LanedExecutor], Coroutine[Any, Any, T]], *, threads: int = 2
) -> T:
    """``scenario(lanes)`` on a loop the lanes serve, and the lanes shut down after it."""

    async def main() -> T:
        lanes = NoSubmits(LanePool(max_workers=threads, thread_name_prefix="turns"))
        loop = asyncio.get_running_loop()
        loop.set_default_executor(lanes)  # as DBOS makes its executor the loop's
        lanes.serve(loop)
        try:
            return await scenario(lanes)
        finally:
            lanes.shutdown(wait=False, cancel_futures=True)

    return asyncio.run(main())


def name() -> str:
    return threading.current_thread().name


def test_the_stores_calls_and_the_rest_take_their_lanes_without_submit(tmp_path: Path) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")

    def thread_name(_c: object) -> str:
        return name()

    async def scenario(lanes: LanedExecutor) -> list[str]:
        names = [
            await in_thread(store.read, thread_name),
            *await asyncio.gather(*(in_thread(store.run, thread_name) for _ in range(20))),
            await in_thread(name),
        ]
        assert lanes.writes.ran == 20
        assert lanes.answers is not None and lanes.answers.wakeups >= 1
        return names

    try:
        read, *writes, other = served_run(scenario)
    finally:
        store.close()
    assert read.startswith("eve-read")
    assert set(writes) == {"eve-writer"}
    assert other.startswith("turns")


def test_a_requests_call_and_an_unserved_loops_go_through_to_thread() -> None:
    async def request(_lanes: LanedExecutor) -> str:
        with fail_fast():
            return await in_thread(name)

    # a request's call reaches the executor (here it refuses it), as its serving loop counts
    with pytest.raises(AssertionError, match="submitted, not answered"):
        served_run(request)

    async def unserved() -> str:
        return await in_thread(name)

    assert asyncio.run(unserved()).startswith("asyncio")


def test_the_call_runs_in_a_copy_of_the_callers_context() -> None:
    def read_and_set() -> str:
        seen = _SEEN.get()
        _SEEN.set("set in the thread")
        return seen

    async def scenario(_lanes: LanedExecutor) -> tuple[str, str]:
        _SEEN.set("the caller's")
        seen = await in_thread(read_and_set)
        return seen, _SEEN.get()

    assert served_run(scenario) == ("the caller's", "the caller's")


def test_the_exception_raised_reaches_the_caller() -> None:
    error = ValueError("the call's own")

    def fails() -> None:
        raise error

    def stops() -> None:
        raise StopIteration

    async def scenario(_lanes: LanedExecutor) -> None:
        with pytest.raises(ValueError) as raised:
            await in_thread(fails)
        assert raised.value is error
        # an asyncio future refuses StopIteration: the caller gets why, not a hang
        with pytest.raises(TypeError, match="StopIteration"):
            await in_thread(stops)

    served_run(scenario)


def test_a_call_cancelled_before_its_thread_took_it_never_runs() -> None:
    release = threading.Event()
    ran: list[str] = []

    async def scenario(_lanes: LanedExecutor) -> None:
        busy = asyncio.create_task(in_thread(release.wait))
        await asyncio.sleep(0)
        queued = asyncio.create_task(in_thread(ran.append, "queued"))
        await asyncio.sleep(0)
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        release.set()
        assert await busy is True
        await in_thread(ran.append, "after")  # the one thread took the queue past it

    try:
        served_run(scenario, threads=1)
    finally:
        release.set()
    assert ran == ["after"]


def test_a_call_cancelled_while_it_runs_ends_and_its_answer_is_dropped() -> None:
    started, release = threading.Event(), threading.Event()
    ended: list[bool] = []

    def holds() -> str:
        started.set()
        release.wait(10)
        ended.append(True)
        return "dropped"

    async def scenario(_lanes: LanedExecutor) -> None:
        running = asyncio.create_task(in_thread(holds))
        while not started.is_set():
            await asyncio.sleep(0.01)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        release.set()
        assert await in_thread(lambda: "next") == "next"  # its thread is free again

    try:
        served_run(scenario, threads=1)
    finally:
        release.set()
    assert ended == [True]


def test_a_lane_shut_down_cancels_the_calls_queued_in_it() -> None:
    release = threading.Event()

    async def scenario(lanes: LanedExecutor) -> None:
        busy = asyncio.create_task(in_thread(release.wait))
        queued = asyncio.create_task(in_thread(name))
        await asyncio.sleep(0)
        lanes.background.shutdown(wait=False, cancel_futures=True)
        with pytest.raises(asyncio.CancelledError):
            await queued
        release.set()
        assert await busy is True

    try:
        served_run(scenario, threads=1)
    finally:
        release.set()


def test_the_calls_keep_their_lanes_bound() -> None:
    release = threading.Event()
    running: set[str] = set()

    def hold() -> None:
        running.add(name())
        release.wait(10)

    async def scenario(lanes: LanedExecutor) -> int:
        calls = [asyncio.create_task(in_thread(hold)) for _ in range(6)]
        while len(running) < 2:
            await asyncio.sleep(0.01)
        assert lanes.background._work_queue.qsize() == 4  # the rest wait for a thread
        release.set()
        await asyncio.gather(*calls)
        return len(lanes.background._threads)

    try:
        assert served_run(scenario, threads=2) == 2
    finally:
        release.set()


def test_lanes_shut_down_serve_their_loop_no_more() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        lanes = LanedExecutor(LanePool(max_workers=1))
        lanes.serve(loop)
        assert served(loop) is lanes
        lanes.shutdown()
        assert served(loop) is None
        with pytest.raises(RuntimeError, match="after shutdown"):
            lanes.reads.answer(LoopReply(loop.create_future(), Answers(loop)), name)
        assert (await in_thread(name)).startswith("asyncio")  # back to to_thread

    asyncio.run(scenario())


def test_answers_given_before_the_loop_takes_them_share_one_wake_up() -> None:
    async def scenario() -> list[int]:
        loop = asyncio.get_running_loop()
        answers = Answers(loop)
        futures: list[asyncio.Future[int]] = [loop.create_future() for _ in range(5)]
        given = threading.Event()

        def give() -> None:
            for n, future in enumerate(futures):
                LoopReply(future, answers).set_result(n)
            given.set()

        threading.Thread(target=give).start()
        given.wait(10)  # the loop's thread held meanwhile: nothing taken yet
        found = list(await asyncio.gather(*futures))
        assert answers.wakeups == 1
        return found

    assert asyncio.run(scenario()) == [0, 1, 2, 3, 4]


def test_a_worker_serves_its_loop_with_its_lanes(make_app: AppFactory) -> None:
    server = InProcessServer(scripted_app(make_app, [say("hi")])).start()
    try:
        session = server.create("hello")
        server.wait_for(session, count("session.waiting"))
        lanes = _get_dbos_instance()._executor_field
        assert isinstance(lanes, LanedExecutor) and lanes.answers is not None
        assert served(lanes.answers.loop) is lanes
        # the turn's appends and its progress were answered through the loop
        assert lanes.answers.wakeups >= 2
    finally:
        server.stop()
