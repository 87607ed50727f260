"""One fork server for a whole pytest-xdist run: the controller starts it before its
workers and they fork from it (``forked.start_shared``), in place of one each."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked
from tests.forkserver import ForkServer, returncode

#: a program that says which process forked it
PARENT = "import os; print(os.getppid())"


def parent_of(server: ForkServer, cwd: Path) -> tuple[int, int]:
    """``PARENT`` forked by ``server``: what it printed and its exit status."""
    read, write = os.pipe()
    with open(os.devnull) as null:
        pid, status = server.spawn(
            {"code": PARENT, "args": []},
            cwd=str(cwd),
            env=dict(os.environ),
            streams=(null.fileno(), write, write),
        )
    os.close(write)
    with os.fdopen(read) as out:
        said = out.read()
    assert pid > 0
    return int(said), returncode(status)


def test_a_started_server_serves_another_process_until_its_starter_stops_it(
    tmp_path: Path,
) -> None:
    started = ForkServer.start(wait=False)
    try:
        shared = ForkServer.shared(started.share())  # as a worker reads it
        assert shared.proc is None and shared.pid == started.pid
        assert shared.ready()
        assert shared.accepts(dict(os.environ))
        assert not shared.accepts({**os.environ, "PYTHONHASHSEED": "7"})  # fixed at its start
        assert parent_of(shared, tmp_path) == (started.pid, 0)
    finally:
        started.stop()
    # ended: nothing is forked from it any more, the commands start as they are
    assert not shared.alive() and not shared.accepts(dict(os.environ))
    assert not shared.ready(timeout=0)


def test_a_workers_forks_come_from_the_controllers_server(tmp_path: Path) -> None:
    if "PYTEST_XDIST_WORKER" not in os.environ:
        pytest.skip("only pytest-xdist's workers share their controller's fork server")
    server = forked._fork_server()
    assert server is not None and server.proc is None  # not started by this worker
    with open(f"/proc/{server.pid}/stat") as stat:
        server_parent = int(stat.read().rsplit(")", 1)[1].split()[1])
    assert server_parent == os.getppid()  # the controller, this worker's parent
    assert parent_of(server, tmp_path) == (server.pid, 0)
    eve = forked.popen(
        [sys.executable, "-m", "eve", "--version"], cwd=tmp_path, stdout=subprocess.DEVNULL
    )
    assert isinstance(eve, forked.ForkedProcess) and eve.wait(60) == 0
