"""Sessions on a real PostgreSQL server shared by several ``eve serve`` processes.

Any process serves any session; a worker SIGKILLed mid-turn has its turn finished by a
survivor (two servers) or by its restarted self (``--workers 2``), completed steps not redone.
The ``postgres_url`` fixture (``tests/sessions/conftest.py``) gives each test a new database.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import psycopg

from tests.conftest import AppFactory, wait_for_file
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Server, assert_dense, count, types
from tests.sessions.test_crash_recovery import assert_finished_once, crash_app
from tests.sessions.test_tasks import CONFIRM
from tests.sessions.test_tasks import app as task_app

#: seconds without a heartbeat before a surviving worker adopts a dead one's turns
FAST_TIMEOUT = "2"


def pg_env(url: str, worker: str, **extra: str) -> dict[str, str]:
    return {"EVE_DATABASE_URL": url, "EVE_WORKER_ID": worker, **extra}


@contextmanager
def servers(*running: Server) -> Iterator[dict[int, str]]:
    """Start each server in turn (the first compiles ``.eve/``); stop them all at the end.

    Yields a dict that, once the block is left, holds each server's output by its port.
    """
    logs: dict[int, str] = {}
    started: list[Server] = []
    try:
        for server in running:
            started.append(server.start())
        yield logs
    finally:
        for server in started:
            logs[server.port] = server.stop()


def hold_turn(server: Server) -> tuple[str, int]:
    """Start the crash app's turn; once ``slow`` reported "started", the session and its pid."""
    session = server.create("go")
    wait_for_file(server.app_root / "slow.started")
    server.wait_for(session, count("action.partial"))  # the first run's progress is durable
    return session, int((server.app_root / "slow.started").read_text())


def release_slow(root: Path) -> None:
    (root / "slow.release").write_text("go on")


def _proc_stat(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` after the command name: state, ppid, …; None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()  # the name may hold spaces and parentheses


def children_of(pid: int) -> set[int]:
    """The pids of ``pid``'s live (not zombie) child processes."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _proc_stat(int(entry.name))
            if stat is not None and stat[0] not in "ZX" and int(stat[1]) == pid:
                found.add(int(entry.name))
    return found


def wait_dead(pid: int, timeout: float = 10.0) -> None:
    """Until ``pid`` is gone or a zombie its parent has not reaped yet."""
    deadline = time.monotonic() + timeout
    while (stat := _proc_stat(pid)) is not None and stat[0] not in "ZX":
        assert time.monotonic() < deadline, f"pid {pid} survived SIGKILL"
        time.sleep(0.02)


def turn_executor(url: str, session: str) -> str:
    """The DBOS executor that ran the session's first turn to the end."""
    with psycopg.connect(url) as connection:
        row = connection.execute(
            "SELECT executor_id, status FROM dbos.workflow_status WHERE workflow_uuid = %s",
            (f"{session}:turn-0",),
        ).fetchone()
    assert row is not None and row[1] == "SUCCESS", row
    executor: str = row[0]
    return executor


# --- any process serves any session ------------------------------------------------------


def test_two_processes_serve_the_same_sessions(make_app: AppFactory, postgres_url: str) -> None:
    root = scripted_app(make_app, [say("first answer"), say("second answer")])
    a = Server(root, env=pg_env(postgres_url, "pg-a"))
    b = Server(root, env=pg_env(postgres_url, "pg-b"))
    with servers(a, b):
        on_a = a.create("one")
        on_b = b.create("uno")
        a.wait_for(on_a, count("session.waiting"))
        b.wait_for(on_b, count("session.waiting"))
        # each follow-up goes to the other process
        assert b.send(on_a, "two").status_code == 202
        assert a.send(on_b, "dos").status_code == 202
        for session in (on_a, on_b):
            b.wait_for(session, count("session.waiting", 2))
        read = {
            (session, srv.port): srv.events(session) for session in (on_a, on_b) for srv in (a, b)
        }

    for session, first, second in ((on_a, "one", "two"), (on_b, "uno", "dos")):
        events = read[session, a.port]
        assert events == read[session, b.port]
        assert_dense(events)
        received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
        assert received == [first, second]
        completed = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
        assert completed == ["first answer", "second answer"]
        assert types(events).count("turn.completed") == 2
        assert types(events)[-1] == "session.waiting"


# --- a worker SIGKILLed mid-turn ---------------------------------------------------------


def test_survivor_adopts_the_turn_of_a_killed_worker(
    make_app: AppFactory, postgres_url: str
) -> None:
    root = crash_app(make_app)
    a = Server(root, env=pg_env(postgres_url, "pg-a", EVE_WORKER_TIMEOUT=FAST_TIMEOUT))
    b = Server(root, env=pg_env(postgres_url, "pg-b", EVE_WORKER_TIMEOUT=FAST_TIMEOUT))
    with servers(a, b) as logs:
        session, holder = hold_turn(a)
        assert a.proc is not None and b.proc is not None
        victim, survivor = (a, b) if holder == a.proc.pid else (b, a)
        assert victim.proc is not None and survivor.proc is not None
        assert holder == victim.proc.pid
        victim.kill()  # and never restarted
        release_slow(root)
        events = survivor.wait_for(session, count("session.waiting"), timeout=30)
        assert victim.proc.poll() is not None
        survivor_pid = survivor.proc.pid
    log = logs[survivor.port]

    ran_in = assert_finished_once(root, events, log)
    assert ran_in == [holder, survivor_pid], log
    victim_name = victim.env["EVE_WORKER_ID"] + "-0"
    assert f"adopted 1 turn(s) of stopped worker {victim_name}" in log, log
    assert turn_executor(postgres_url, session) == survivor.env["EVE_WORKER_ID"] + "-0"


def restarted_mid_turn(server: Server) -> str:
    """On ``server`` (``--workers 2`` of the crash app), SIGKILL the worker holding the turn
    and check that the supervisor restarted it and the turn finished once, with no
    sibling's adoption; the session. The default worker timeout (15 s) is far off: the
    restarted worker's DBOS recovery, not a sibling's heartbeat rescue, brings it back."""
    root = server.app_root
    with servers(server) as logs:
        assert server.proc is not None
        session, holder = hold_turn(server)
        before = children_of(server.proc.pid)
        assert holder in before and len(before) == 2, (holder, before)
        os.kill(holder, signal.SIGKILL)
        wait_dead(holder)
        release_slow(root)
        events = server.wait_for(session, count("session.waiting"), timeout=30)
        after = children_of(server.proc.pid)
    log = logs[server.port]

    assert f"(pid {holder}) exited with status 9; restarting it" in log, log
    assert "adopted" not in log, log
    assert len(after) == 2 and holder not in after, (before, after)
    ran_in = assert_finished_once(root, events, log)
    # recovery puts the turn back on the queue, so either worker may have re-run it
    assert len(ran_in) == 2 and ran_in[0] == holder and ran_in[1] in after, (ran_in, after)
    return session


def test_supervisor_restarts_the_killed_worker_which_finishes_the_turn(
    make_app: AppFactory, postgres_url: str
) -> None:
    server = Server(
        crash_app(make_app), args=["--workers", "2"], env=pg_env(postgres_url, "pg-sup")
    )
    session = restarted_mid_turn(server)
    assert turn_executor(postgres_url, session) in {"pg-sup-0", "pg-sup-1"}


# --- many sessions at once ---------------------------------------------------------------

SESSIONS = 24


def test_concurrent_sessions_across_two_processes(make_app: AppFactory, postgres_url: str) -> None:
    root = scripted_app(make_app, [call("leak"), say("done")], tools=("leak",))
    a = Server(root, env=pg_env(postgres_url, "pg-a"))
    b = Server(root, env=pg_env(postgres_url, "pg-b"))
    pair = (a, b)
    with servers(a, b), ThreadPoolExecutor(12) as pool:
        sessions = list(pool.map(lambda n: (n, pair[n % 2].create(f"hello {n}")), range(SESSIONS)))
        logs = list(
            pool.map(
                # each session read back from the process that did not create it
                lambda s: (s[0], pair[(s[0] + 1) % 2].wait_for(s[1], count("session.waiting"))),
                sessions,
            )
        )

    assert len({session for _, session in sessions}) == SESSIONS
    for n, events in logs:
        assert_dense(events)
        assert types(events).count("turn.completed") == 1
        received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
        assert received == [f"hello {n}"]
        [result] = [e["data"]["output"] for e in events if e["type"] == "action.result"]
        assert '"session_state":1' in result
        completed = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
        assert completed == ["done"]
        assert types(events)[-1] == "session.waiting"


# --- a parked task outlives its worker ---------------------------------------------------


def executor_of(url: str, workflow_id: str) -> str:
    with psycopg.connect(url) as connection:
        row = connection.execute(
            "SELECT executor_id FROM dbos.workflow_status WHERE workflow_uuid = %s",
            (workflow_id,),
        ).fetchone()
    assert row is not None, workflow_id
    executor: str = row[0]
    return executor


def test_survivor_adopts_a_turn_parked_in_a_workflow_tool(
    make_app: AppFactory, postgres_url: str
) -> None:
    root = task_app(
        make_app, {"agent/tools/confirm.py": CONFIRM}, [call("confirm", slot="Friday"), say("ok")]
    )
    a = Server(root, env=pg_env(postgres_url, "pg-a", EVE_WORKER_TIMEOUT=FAST_TIMEOUT))
    b = Server(root, env=pg_env(postgres_url, "pg-b", EVE_WORKER_TIMEOUT=FAST_TIMEOUT))
    with servers(a, b) as logs:
        session = a.create("deliver")
        parked = a.wait_for(session, count("turn.waiting"))
        [[request]] = [e["data"]["requests"] for e in parked if e["type"] == "input.requested"]
        holder = executor_of(postgres_url, request["task_id"])
        assert holder == executor_of(postgres_url, f"{session}:turn-0")
        victim, survivor = (a, b) if holder == "pg-a-0" else (b, a)
        victim.kill()  # and never restarted: the survivor must take turn and task
        survivor.answer(session, request["request_id"], "yes")
        events = survivor.wait_for(session, count("session.waiting"), timeout=60)
    log = logs[survivor.port]
    assert f"adopted 1 turn(s) and 1 task(s) of stopped worker {holder}" in log, log
    assert (root / "confirmed.log").read_text() == "Friday yes\n"
    assert_dense(events)
    assert types(events).count("input.requested") == 1  # the replay asked nobody again
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert result["status"] == "completed"
