"""``eve serve --workers``: which failures the supervisor restarts, and which stop it.

A worker that dies after serving is restarted (``test_postgres.py`` kills one mid-turn). One
that fails before it ever served, or that keeps dying, would fail the same way forever: the
supervisor stops every worker and exits non-zero, and the worker's error is one ``eve:`` line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest

from tests import forked
from tests.conftest import REPO_ROOT, AppFactory
from tests.sessions.apps import say
from tests.sessions.harness import Server, count, free_port, script

PASSWORD = "hunter2-not-for-logs"

#: ``supervise`` with a stand-in for the uvicorn worker; ``{body}`` is what worker ``index``
#: does after being forked; the crash-loop window is wide so only the count matters
SUPERVISED = """
import os, signal, socket, sys, time
from eve.server.workers import supervise

def run_worker(index, ready):
{body}

sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen()
sys.exit(supervise({workers}, sock, run_worker, crash_loop_seconds=3600))
"""


def supervised(body: str, *, workers: int = 1, **env: str) -> subprocess.CompletedProcess[str]:
    code = SUPERVISED.format(body=textwrap.indent(textwrap.dedent(body), "    "), workers=workers)
    # forked: importing eve.server.workers anew is about 1.5 s of CPU a start
    return forked.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def eve_serve(root: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``eve serve`` that is expected to stop by itself; neither database variable inherited."""
    inherited = {k: v for k, v in os.environ.items() if not k.endswith("DATABASE_URL")}
    return forked.run(
        [sys.executable, "-m", "eve", "serve", "--port", "0", *args],
        cwd=root,
        env={**inherited, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# --- failing before serving --------------------------------------------------------------


def test_workers_that_cannot_reach_the_database_stop_the_server(make_app: AppFactory) -> None:
    root = make_app()
    # nothing listens on that port: every worker fails while opening the session database
    url = f"postgresql://eve:{PASSWORD}@127.0.0.1:{free_port()}/eve"
    done = eve_serve(root, ["--workers", "2"], {"EVE_DATABASE_URL": url})

    assert done.returncode == 1, done.stderr  # DatabaseUnavailable's exit code, as with one
    assert "eve: cannot open the session database (OperationalError)" in done.stderr
    assert "before it was ready; stopping all workers" in done.stderr
    assert "restarting it" not in done.stderr
    assert "Traceback" not in done.stderr and PASSWORD not in done.stderr


def test_a_worker_that_raises_is_one_redacted_line_and_a_failed_server() -> None:
    token = "tok_" + "s3cr3t" * 6
    done = supervised(
        'raise RuntimeError("boom with " + os.environ["EVE_API_TOKEN"])', EVE_API_TOKEN=token
    )

    assert done.returncode == 1, done.stderr
    assert "eve: worker 0 failed: RuntimeError: boom with [redacted]\n" in done.stderr
    assert "worker 0 (pid " in done.stderr and "with status 1 before it was ready" in done.stderr
    assert "Traceback" not in done.stderr and token not in done.stderr


def test_one_worker_failing_to_start_stops_those_that_serve() -> None:
    body = """
        if index == 0:
            ready()
            time.sleep(600)  # serving until the supervisor stops it
        else:
            sys.exit(2)  # as ServerConfigError exits
    """
    done = supervised(body, workers=2)

    # the failed worker's status is the server's, so one worker or many exit alike
    assert done.returncode == 2, done.stderr
    assert "worker 1 (pid " in done.stderr
    assert "exited with status 2 before it was ready; stopping all workers" in done.stderr
    assert "restarting it" not in done.stderr


# --- dying after serving -----------------------------------------------------------------


def test_a_worker_that_keeps_dying_after_serving_stops_the_server() -> None:
    done = supervised("ready()\nos.kill(os.getpid(), signal.SIGKILL)")

    assert done.returncode == 1, done.stderr
    assert done.stderr.count("exited with status 9; restarting it") == 4, done.stderr
    assert "exited with status 9, 5 times within 3600 s: it is crash-looping" in done.stderr


# --- the workers read the database URL from the variable agent.py names ------------------

SHOP_AGENT = """
    from eve import define_agent
    default = define_agent(
        model="offline/script:script.json", database_url_env="SHOP_DATABASE_URL"
    )
"""


def shop_app(make_app: AppFactory) -> Path:
    root = make_app({"agent/agent.py": SHOP_AGENT, "agent/instructions.md": "Hi.\n"}, minimal=False)
    script(root, [say("hello from the shop")])
    return root


def test_workers_read_the_url_from_database_url_env(
    make_app: AppFactory, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVE_DATABASE_URL", raising=False)
    root = shop_app(make_app)
    server = Server(root, args=["--workers", "2"], env={"SHOP_DATABASE_URL": postgres_url})
    server.start()
    try:
        session = server.create("hi")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()

    completed = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert completed == ["hello from the shop"]
    with psycopg.connect(postgres_url) as connection:
        row = connection.execute("SELECT id FROM eve_sessions WHERE id = %s", (session,))
        assert row.fetchone() is not None  # stored where SHOP_DATABASE_URL points
