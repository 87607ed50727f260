"""``tests/fork_launch.py``: ``python -m MODULE`` started by another program, forked from the
test's fork server, runs as the fresh interpreter it stands for (arguments, directory,
environment, ``PYTHONPATH``, standard streams, exit status, signals); what a fork cannot
honour gets a fresh interpreter's command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import forked

#: prints what it was started with, then exits 3 (or waits, told to)
PROBE = """
import json, os, sys, time
print(json.dumps({
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
    "probe": os.environ.get("PROBE"),
    "socket": os.environ.get("EVE_TEST_FORK_SOCKET"),
    "forked": "eve.cli.main" in sys.modules,
}), flush=True)
if sys.argv[1:] == ["wait"]:
    time.sleep(60)
sys.exit(3)
"""


@pytest.fixture(autouse=True)
def _forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the fork server: on even where the run turned it off."""
    monkeypatch.delenv(forked.ENABLED_ENV, raising=False)


@pytest.fixture
def probe_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a program that starts ``python -m probe`` from ``PYTHONPATH``."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "probe.py").write_text(PROBE, encoding="utf-8")
    return {**os.environ, "PYTHONPATH": str(tmp_path / "lib"), "PROBE": "given"}


def probed(command: list[str], *, cwd: Path, env: dict[str, str]) -> Any:
    """What a probe printed, run to its end (it exits 3)."""
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 3, done.stderr
    return json.loads(done.stdout)


def test_a_launched_module_runs_forked_with_what_it_was_given(
    probe_env: dict[str, str], tmp_path: Path
) -> None:
    command, env = forked.module_command("probe", probe_env)
    assert command[:3] == [sys.executable, "-S", str(forked.LAUNCHER)]
    assert probed([*command, "one", "two"], cwd=tmp_path, env=env) == {
        "argv": ["one", "two"],
        "cwd": str(tmp_path),
        "probe": "given",
        "socket": None,  # the launcher's own variable is not passed on
        "forked": True,  # eve was imported before the module ran: a fork of the fork server
    }


def test_a_signal_to_the_launcher_ends_the_child_and_shows_in_its_status(
    probe_env: dict[str, str], tmp_path: Path
) -> None:
    command, env = forked.module_command("probe", probe_env)
    launcher = subprocess.Popen(
        [*command, "wait"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True
    )
    assert launcher.stdout is not None
    assert json.loads(launcher.stdout.readline())["forked"]
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(30) == 128 + signal.SIGTERM


def test_what_a_fork_cannot_honour_gets_a_fresh_interpreter(
    monkeypatch: pytest.MonkeyPatch, probe_env: dict[str, str], tmp_path: Path
) -> None:
    hashed = {**probe_env, "PYTHONHASHSEED": "7"}
    command, env = forked.module_command("probe", hashed)
    assert (command, env) == ([sys.executable, "-m", "probe"], hashed)
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["forked"] is False
    monkeypatch.setenv(forked.ENABLED_ENV, "0")
    assert forked.module_command("probe", probe_env)[0] == [sys.executable, "-m", "probe"]


#: a script that imports a module beside it, as only its directory first on the path allows
SCRIPT_PROBE = """
import json, os, sys
import beside
print(json.dumps({
    "argv": sys.argv,
    "path0": sys.path[0],
    "beside": beside.NAME,
    "probe": os.environ.get("PROBE"),
    "forked": "eve.cli.main" in sys.modules,
}), flush=True)
sys.exit(3)
"""


def test_a_launched_script_runs_forked_as_python_script_would(tmp_path: Path) -> None:
    """``--script``: the socket on the command line, the environment only what the starter
    gave (the MCP SDK gives a stdio server a few basics), the script's directory first on
    the path, the script's name as ``argv[0]``."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "probe.py").write_text(SCRIPT_PROBE, encoding="utf-8")
    (tmp_path / "bin" / "beside.py").write_text("NAME = 'beside'\n", encoding="utf-8")
    command = forked.script_command()
    assert command == [sys.executable, "-S", str(forked.LAUNCHER), "--script", command[-1]]
    env = {"PATH": os.environ["PATH"], "PROBE": "given"}
    assert probed([*command, "bin/probe.py", "one"], cwd=tmp_path, env=env) == {
        "argv": ["bin/probe.py", "one"],
        "path0": str(tmp_path / "bin"),
        "beside": "beside",
        "probe": "given",
        "forked": True,
    }


def test_without_the_fork_server_a_script_gets_no_forked_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(forked.ENABLED_ENV, "0")
    assert forked.script_command() is None
