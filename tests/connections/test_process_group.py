"""A stdio server's group counts as ended once only zombies are left of it: an orphan the
system's init has not reaped yet is dead, and ``ProcessGroup.end`` need not wait for it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eve.connections.process_group import has_living_member

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")


def _state(pid: int) -> str:
    return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_group_of_only_a_zombie_has_no_living_member() -> None:
    # the leader of a new group, which exits and stays unreaped (a zombie) until waited for
    process = subprocess.Popen([sys.executable, "-c", ""], start_new_session=True)
    deadline = time.monotonic() + 30
    while _state(process.pid) != "Z":
        assert time.monotonic() < deadline, "the process never exited"
        time.sleep(0.01)
    try:
        os.killpg(process.pid, 0)  # a signal still finds the group
        assert not has_living_member(process.pid)
    finally:
        process.wait()


def test_a_group_with_a_running_process_has_a_living_member() -> None:
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert has_living_member(process.pid)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
