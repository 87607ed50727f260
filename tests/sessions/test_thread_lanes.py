"""The worker's threads: a request never queues behind the turns' work."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from dbos._dbos import _get_dbos_instance

from eve.sessions.database_errors import fail_fast
from eve.sessions.thread_lanes import LanedExecutor, after_answer
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
        assert isinstance(_get_dbos_instance()._executor_field, LanedExecutor)
    finally:
        server.stop()
