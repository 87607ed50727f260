"""``eve serve --workers 2`` on the embedded SQLite: two processes share one pair of files.

Turns of many sessions run in both workers, a session's turns keep their order whichever
worker accepted each message, and a stream served by one worker follows the turn the other
runs. A worker SIGKILLed mid-turn has its turn finished by its restarted self (the
supervisor), or, when nothing restarts it, adopted by a sibling process on the same files;
completed steps are not redone. An answer sent through one process reaches the turn parked
in another.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TypeVar

import httpx

from tests.conftest import AppFactory, write_files
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Event, Server, assert_dense, count, loopback_tls, types
from tests.sessions.test_approvals import approval_app, request_of
from tests.sessions.test_crash_recovery import assert_finished_once, crash_app
from tests.sessions.test_postgres import (
    children_of,
    hold_turn,
    release_slow,
    restarted_mid_turn,
)

SESSIONS = 6
T = TypeVar("T")
#: a tool that says which process ran it: the turn's worker, read from the log itself
WHERE = """
    import os
    from eve.tools import tool

    @tool
    def where() -> int:
        '''The process this turn runs in.'''
        return os.getpid()
"""


def where_app(make_app: AppFactory) -> Path:
    # two turns a session: each calls ``where``, then answers
    root = scripted_app(make_app, [call("where"), say("one"), call("where"), say("two")])
    write_files(root, {"agent/tools/where.py": WHERE})
    return root


def turn_pids(events: list[Event]) -> list[int]:
    return [int(e["data"]["output"]) for e in events if e["type"] == "action.result"]


def executors(root: Path) -> dict[str, str]:
    """Each turn's DBOS executor (worker name), by workflow id, from DBOS's own file."""
    with sqlite3.connect(root / ".eve/sessions/dbos.sqlite") as db:
        rows = db.execute(
            "SELECT workflow_uuid, executor_id FROM workflow_status WHERE name = 'eve.turn'"
        ).fetchall()
    return {str(workflow): str(executor) for workflow, executor in rows}


def serving_pid(response: httpx.Response, port: int, pids: set[int]) -> int:
    """Which of ``pids`` holds the server's end of ``response``'s connection (``/proc``)."""
    sock = response.extensions["network_stream"].get_extra_info("socket")
    mine = f"0100007F:{sock.getsockname()[1]:04X}"
    server = f"0100007F:{port:04X}"
    inode = next(
        fields[9]
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
        if (fields := line.split())[1] == server and fields[2] == mine
    )
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                if os.readlink(fd) == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue  # closed meanwhile
    raise AssertionError(f"no worker holds connection {mine}")


def workers_of(server: Server, n: int) -> set[int]:
    """The pids of the server's ``n`` workers, once the supervisor has started them all."""
    assert server.proc is not None
    deadline = time.monotonic() + 30
    while len(pids := children_of(server.proc.pid)) < n:
        assert time.monotonic() < deadline, pids
        time.sleep(0.05)
    return pids


class Follower:
    """A followed stream of a session, read in a thread (once started) until the session's
    second wait."""

    def __init__(self, stack: ExitStack, server: Server, session: str) -> None:
        self.response = stack.enter_context(server.stream(f"/session/{session}/stream"))
        self.events: list[Event] = []
        self.thread = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        for line in self.response.iter_lines():
            if line.strip():
                self.events.append(json.loads(line))
                if count("session.waiting", 2)(self.events):
                    return


@contextmanager
def one_on_each_worker(
    open_one: Callable[[ExitStack], tuple[T, httpx.Response]], server: Server, pids: set[int]
) -> Iterator[dict[int, T]]:
    """What ``open_one`` opens (a stream, a kept-alive client) until each worker holds one
    of their connections, by worker pid: which worker accepts a connection is the kernel's
    choice. The spares are closed at once."""
    with ExitStack() as stack:
        found: dict[int, T] = {}
        deadline = time.monotonic() + 30  # a worker just started may not accept yet
        while len(found) < len(pids):
            assert time.monotonic() < deadline, found
            spare = ExitStack()
            opened, response = open_one(spare)
            pid = serving_pid(response, server.port, pids)
            if pid in found:
                spare.close()
            else:
                found[pid] = opened
                stack.push(spare)
        yield found


def test_two_workers_share_sessions_in_order_and_follow_each_others_turns(
    make_app: AppFactory,
) -> None:
    root = where_app(make_app)
    server = Server(root, args=["--workers", "2"], env={"EVE_WORKER_ID": "lite"})
    server.start()

    def client(stack: ExitStack) -> tuple[httpx.Client, httpx.Response]:
        # kept alive: its requests go to the worker that accepted its connection
        client = httpx.Client(headers=server.headers(), timeout=30, verify=loopback_tls())
        http = stack.enter_context(client)
        return http, http.get(server.url + "/health")

    def follower(session: str) -> Callable[[ExitStack], tuple[Follower, httpx.Response]]:
        def open_one(stack: ExitStack) -> tuple[Follower, httpx.Response]:
            opened = Follower(stack, server, session)
            return opened, opened.response

        return open_one

    try:
        pids = workers_of(server, 2)
        with ExitStack() as stack, ThreadPoolExecutor(SESSIONS) as pool:
            sessions = [server.create() for _ in range(SESSIONS)]
            follows = {
                s: stack.enter_context(one_on_each_worker(follower(s), server, pids))
                for s in sessions
            }
            for by_pid in follows.values():
                for each in by_pid.values():
                    each.thread.start()
            via = list(stack.enter_context(one_on_each_worker(client, server, pids)).values())

            def talk(n: int) -> None:
                # the first message through one worker, the second through the other,
                # while the first turn runs; sessions take turns at which goes first
                for k, message in enumerate(("first", "second")):
                    sent = via[(n + k) % 2].post(
                        f"{server.url}/session/{sessions[n]}", json={"message": message}
                    )
                    assert sent.status_code == 202, sent.text

            list(pool.map(talk, range(SESSIONS)))
            stored = {s: server.wait_for(s, count("session.waiting", 2)) for s in sessions}
            for by_pid in follows.values():
                for each in by_pid.values():
                    each.thread.join(30)
    finally:
        log = server.stop()

    ran = executors(root)
    assert {ran[f"{s}:turn-{t}"] for s in sessions for t in (0, 1)} == {"lite-0", "lite-1"}, ran
    for session, events in stored.items():
        assert_dense(events)
        received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
        assert received == ["first", "second"], log
        completed = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
        assert completed == ["one", "two"], log
        assert types(events).count("turn.completed") == 2
        assert set(turn_pids(events)) <= pids
        # a stream on each worker saw every event live, the other worker's turns' included
        for each in follows[session].values():
            assert each.events == events, log


def test_a_killed_worker_is_restarted_and_finishes_its_turn_once(make_app: AppFactory) -> None:
    server = Server(crash_app(make_app), args=["--workers", "2"], env={"EVE_WORKER_ID": "lite"})
    session = restarted_mid_turn(server)
    assert executors(server.app_root)[f"{session}:turn-0"] in {"lite-0", "lite-1"}


def test_a_sibling_on_the_same_files_adopts_a_killed_servers_turn(make_app: AppFactory) -> None:
    root = crash_app(make_app)
    fast = {"EVE_WORKER_TIMEOUT": "2"}
    a = Server(root, env={"EVE_WORKER_ID": "lite-a", **fast})
    b = Server(root, env={"EVE_WORKER_ID": "lite-b", **fast})
    a.start()  # the first compiles .eve/; then both serve the one pair of files
    try:
        b.start()
        session, holder = hold_turn(a)
        assert a.proc is not None and b.proc is not None
        victim, survivor = (a, b) if holder == a.proc.pid else (b, a)
        victim.kill()  # and never restarted
        release_slow(root)
        events = survivor.wait_for(session, count("session.waiting"), timeout=30)
        assert survivor.proc is not None
        survivor_pid = survivor.proc.pid
    finally:
        log = a.stop() + b.stop()

    ran_in = assert_finished_once(root, events, log)
    assert ran_in == [holder, survivor_pid], log
    victim_name = victim.env["EVE_WORKER_ID"] + "-0"
    assert f"adopted 1 turn(s) of stopped worker {victim_name}" in log, log
    assert executors(root)[f"{session}:turn-0"] == survivor.env["EVE_WORKER_ID"] + "-0"


def test_an_answer_through_one_server_continues_a_turn_parked_on_the_other(
    make_app: AppFactory,
) -> None:
    root = approval_app(make_app)
    a, b = (Server(root, env={"EVE_WORKER_ID": name}) for name in ("lite-a", "lite-b"))
    a.start()
    try:
        b.start()
        session = a.create("ship the anvil")
        request = request_of(a.wait_for(session, count("turn.waiting")))
        # DBOS on SQLite hears another process's message by polling the file (once a second)
        b.answer(session, request["request_id"], "approve")
        events = b.wait_for(session, count("session.waiting"))
    finally:
        log = a.stop() + b.stop()

    assert_dense(events)
    assert (root / "shipped.log").read_text() == "anvil\n", log
    assert [e["data"]["output"] for e in events if e["type"] == "action.result"] == [
        "shipped anvil"
    ]
    assert executors(root)[f"{session}:turn-0"] == "lite-a-0"
