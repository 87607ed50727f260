"""DBOS's start and end of a workflow on the serving loop's thread (``dbos_loop_writes.py``,
``dbos_loop_start.py``), through DBOS itself on eve's SQLite file: on the loop when the
file is free, in a thread as before when another thread or process holds it or a write of
the group raises, each caller with its own outcome; and the setting that switches it off."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID
from dbos._dbos import _get_dbos_instance
from dbos._error import DBOSConflictingWorkflowError
from sqlalchemy.engine import Engine

from eve.errors import ServerConfigError
from eve.server.slices import SLICE_ENV
from eve.server.workers import serving_loop
from eve.sessions.dbos_loop_writes import LoopWrites, writes_of, writes_on_loop
from eve.sessions.settings import DBOS_ON_LOOP_ENV, dbos_writes_on_loop, resolve_settings
from eve.sessions.sqlite_gate import write_gate
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_claim_now import held_by_another_thread


@DBOS.workflow(name="tests.on_loop")
async def _on_loop(n: int) -> int:
    return n


@DBOS.workflow(name="tests.on_loop_other")
async def _other(n: int) -> int:
    return -n


async def _started(prefix: str, numbers: range) -> list[Any]:
    """Each number's workflow started at once (their starts queue together), each one's
    result or the error its start met."""

    async def one(n: int) -> int:
        with SetWorkflowID(f"{prefix}-{n}"):
            handle = await DBOS.start_workflow_async(_on_loop, n)
        result: int = await handle.get_result()
        return result

    return list(await asyncio.gather(*(one(n) for n in numbers), return_exceptions=True))


@contextlib.contextmanager
def serving(make_app: AppFactory, env: dict[str, str] | None = None) -> Iterator[InProcessServer]:
    app_root = scripted_app(make_app, [say("hello there")])
    loop = serving_loop({SLICE_ENV: "2"})
    server = InProcessServer(app_root, env=env or {}, loop_factory=loop).start()
    try:
        yield server
    finally:
        server.stop()


def call(server: InProcessServer, prefix: str, numbers: range) -> list[Any]:
    assert server.http is not None and server.http.portal is not None
    return server.http.portal.call(_started, prefix, numbers)


def system_engine() -> Engine:
    engine: Engine = _get_dbos_instance()._sys_db.engine
    return engine


def writes() -> LoopWrites:
    found = writes_of(system_engine())
    assert found is not None, "a SQLite worker's DBOS writes may run on the loop"
    return found


def recorded(prefix: str) -> list[tuple[str, Any, Any]]:
    """What DBOS reads back of the workflows under ``prefix``: status, inputs, output."""
    listed = DBOS.list_workflows(workflow_id_prefix=prefix, load_input=True)
    return sorted((w.status, w.input["args"] if w.input else None, w.output) for w in listed)


def test_a_turn_s_start_and_end_run_on_the_loop(make_app: AppFactory) -> None:
    with serving(make_app) as server:
        before = writes().on_loop
        session = server.create("hi")
        events = server.wait_for(session, count("session.waiting"))
        assert [e["data"]["message"] for e in events if e["type"] == "message.completed"] == [
            "hello there"
        ]
        assert writes().on_loop - before >= 2  # its start and its end at least
        assert writes().not_now == 0


def test_starts_and_ends_that_meet_are_one_transaction_read_back_as_dbos_wrote_them(
    make_app: AppFactory,
) -> None:
    with serving(make_app) as server:
        assert call(server, "met", range(5)) == list(range(5))
        assert recorded("met-") == [("SUCCESS", (n,), n) for n in range(5)]
        assert max(writes().groups) >= 5  # the five starts, queued together
        assert writes().not_now == 0


def test_a_file_another_process_holds_sends_them_to_threads_with_the_same_outcome(
    make_app: AppFactory,
) -> None:
    with serving(make_app) as server:
        path = system_engine().url.database
        assert path is not None
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # another worker's write
        # let go while the threads wait for it (they wait as DBOS's writes do)
        threading.Timer(0.5, lambda: other.execute("ROLLBACK")).start()
        try:
            assert call(server, "held", range(3)) == [0, 1, 2]
        finally:
            other.close()
        assert writes().not_now >= 3  # the starts at least
        assert recorded("held-") == [("SUCCESS", (n,), n) for n in range(3)]


def test_a_gate_another_thread_holds_sends_them_to_threads(make_app: AppFactory) -> None:
    with serving(make_app) as server:
        gate = write_gate(system_engine())
        assert gate is not None
        # held throughout: a thread's write waits for it a while, then takes the file itself
        with held_by_another_thread(gate):
            assert call(server, "gated", range(3)) == [0, 1, 2]
        assert writes().not_now >= 3
        assert recorded("gated-") == [("SUCCESS", (n,), n) for n in range(3)]


def test_a_write_that_raises_sends_its_group_to_threads_each_with_its_own_outcome(
    make_app: AppFactory,
) -> None:
    """One start finds its id taken by another function's workflow: its group is undone, and
    in threads that start meets DBOS's error while the others start and end."""
    with serving(make_app) as server:
        assert server.http is not None and server.http.portal is not None

        async def taken() -> None:
            with SetWorkflowID("raises-1"):
                handle = await DBOS.start_workflow_async(_other, 1)
            await handle.get_result()

        server.http.portal.call(taken)
        before = writes().not_now
        found = call(server, "raises", range(3))
        assert found[0] == 0 and found[2] == 2
        assert isinstance(found[1], DBOSConflictingWorkflowError)
        assert writes().not_now - before >= 3  # the group of three starts
        assert recorded("raises-") == [
            ("SUCCESS", (0,), 0),
            ("SUCCESS", (1,), -1),  # the first workflow under its id, untouched
            ("SUCCESS", (2,), 2),
        ]


def test_off_every_write_runs_in_a_thread(make_app: AppFactory) -> None:
    with serving(make_app, env={DBOS_ON_LOOP_ENV: "off"}) as server:
        assert call(server, "off", range(3)) == [0, 1, 2]
        assert writes_of(system_engine()) is None


def test_on_a_loop_without_slices_every_write_runs_in_a_thread(make_app: AppFactory) -> None:
    server = InProcessServer(scripted_app(make_app, [say("hello")])).start()  # asyncio's loop
    try:
        assert call(server, "plain", range(3)) == [0, 1, 2]
        assert writes().on_loop == 0 and writes().not_now == 0
    finally:
        server.stop()


def test_an_engine_without_a_write_gate_has_no_writes_on_the_loop(tmp_path: Path) -> None:
    """PostgreSQL's engine, and any SQLite engine eve did not gate."""
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'plain.sqlite'}")
    try:
        assert writes_on_loop(engine) is None
    finally:
        engine.dispose()


@pytest.mark.parametrize(("raw", "on"), [("", True), (" On ", True), ("off", False)])
def test_the_setting(raw: str, on: bool, tmp_path: Path) -> None:
    assert dbos_writes_on_loop(raw) is on
    settings = resolve_settings(tmp_path, env={DBOS_ON_LOOP_ENV: raw})
    assert settings.dbos_writes_on_loop is on


def test_a_bad_setting_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ServerConfigError, match=f"{DBOS_ON_LOOP_ENV} must be on or off"):
        resolve_settings(tmp_path, env={DBOS_ON_LOOP_ENV: "yes"})
