"""One fork server for all of pytest-xdist's workers (``tests/forkserver.py``): a process
that did not start it finds it by its socket, with the environment it started with, forks
through it, and sees it end."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from eve._version import __version__
from tests.forkserver import ENV_FILE, ForkServer, returncode


def test_a_shared_fork_server_is_found_by_its_socket_and_forks(tmp_path: Path) -> None:
    started = ForkServer.launch()
    try:
        shared = ForkServer.shared(started.path)  # waits until it listens
        assert (shared.pid, shared.env, shared.proc) == (started.pid, started.env, None)
        assert shared.accepts(dict(os.environ))
        assert not shared.accepts({**os.environ, "TZ": "Pacific/Chatham"})
        out = tmp_path / "out"
        with out.open("wb") as stream:
            fd = stream.fileno()
            pid, status = shared.spawn(
                ["--version"], cwd=str(tmp_path), env=dict(os.environ), streams=(0, fd, fd)
            )
            assert returncode(status) == 0
        assert pid != started.pid
        assert __version__ in out.read_text()
    finally:
        started.stop()
    assert not shared.alive()
    assert not started.path.with_name(ENV_FILE).exists()


def test_a_shared_fork_server_that_ended_unready_is_an_error(tmp_path: Path) -> None:
    socket_path = tmp_path / "socket"
    # a process that ended (and was waited for) stands for a fork server that failed to start
    ended = subprocess.Popen(["true"])
    ended.wait()
    (tmp_path / ENV_FILE).write_text(json.dumps({"pid": ended.pid, "env": {}}))
    with pytest.raises(RuntimeError, match="ended unready"):
        ForkServer.shared(socket_path)
