"""``tests/forked.py``: ``python -m eve`` (or ``python -c CODE``, ``python SCRIPT``) forked
from a process that has imported eve behaves as the fresh interpreter it stands for (output,
status, directory, environment, signals), and what a fork cannot honour starts a fresh
interpreter."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from eve.sessions import resolve_settings
from eve.sessions.engine import dbos_config
from tests import forked
from tests.conftest import AppFactory
from tests.forkserver import SQLITE_POLL_SECONDS

EVE = [sys.executable, "-m", "eve"]


@pytest.fixture(autouse=True)
def _forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the fork server: on even where the run turned it off."""
    monkeypatch.delenv(forked.ENABLED_ENV, raising=False)


def both(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], ...]:
    """``eve *args`` run forked, then by ``subprocess.run`` itself."""
    fork = forked.run([*EVE, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    fresh = subprocess.run(
        [*EVE, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    return fork, fresh


def test_a_fork_prints_and_exits_as_a_fresh_interpreter(make_app: AppFactory) -> None:
    root = make_app()
    for args in (["compile"], ["info"], ["no-such-command"]):
        fork, fresh = both(args, root)
        assert (fork.returncode, fork.stdout, fork.stderr) == (
            fresh.returncode,
            fresh.stdout,
            fresh.stderr,
        ), args
    assert fork.returncode == 2
    assert "No such command 'no-such-command'" in fork.stderr


def test_a_fork_takes_the_directory_environment_and_input_it_is_given(
    make_app: AppFactory, tmp_path: Path
) -> None:
    root = make_app()
    env = {**os.environ, "EVE_APP_ROOT": str(root)}
    done = forked.run([*EVE, "compile"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (root / ".eve/compile/compiled-agent-manifest.json").is_file()
    assert not (tmp_path / ".eve").exists()

    process = forked.popen(
        [*EVE, "dev"],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert isinstance(process, forked.ForkedProcess)
    out, err = process.communicate("hello\n", timeout=60)
    assert process.returncode == 0, err
    assert "you › " in out


#: a ``python -c`` program that shows what it was started as, and ends as it is told
PROGRAM = """
import json, os, sys
from eve.sessions import engine
said = {"name": __name__, "argv": sys.argv, "path0": sys.path[0], "cwd": os.getcwd(),
        "input": sys.stdin.read(), "loaded": "eve.sessions.engine" in sys.modules}
print(json.dumps(said))
if sys.argv[1] == "raise":
    raise RuntimeError("as asked")
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("ending", ["0", "3", "raise"])
def test_a_forked_program_runs_as_python_c_would(ending: str, tmp_path: Path) -> None:
    argv = [sys.executable, "-c", PROGRAM, ending]
    process = forked.popen(
        argv, cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert isinstance(process, forked.ForkedProcess)
    out, err = process.communicate("typed\n", timeout=60)
    fresh = subprocess.run(
        argv, cwd=tmp_path, input="typed\n", capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert (process.returncode, out) == (fresh.returncode, fresh.stdout)
    assert json.loads(out) == {
        "name": "__main__",
        "argv": ["-c", ending],
        "path0": "",
        "cwd": str(tmp_path),
        "input": "typed\n",
        "loaded": True,
    }
    if ending == "raise":
        assert process.returncode == 1
        assert err.endswith("RuntimeError: as asked\n") and fresh.stderr.endswith(
            "RuntimeError: as asked\n"
        )


def test_a_forked_script_runs_as_python_script_would(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "probe.py"
    script.parent.mkdir()
    script.write_text(
        "import json, sys\nprint(json.dumps([__name__, sys.argv, sys.path[0]]))\nsys.exit(4)\n"
    )
    argv = [sys.executable, "bin/probe.py", "one"]
    process = forked.popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    assert isinstance(process, forked.ForkedProcess)
    out, _ = process.communicate(timeout=60)
    fresh = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert (process.returncode, out) == (fresh.returncode, fresh.stdout)
    assert json.loads(out) == ["__main__", ["bin/probe.py", "one"], str(script.parent)]


def test_a_signal_ends_a_fork_with_the_status_popen_reports(make_app: AppFactory) -> None:
    process = forked.popen(
        [*EVE, "dev"], cwd=make_app(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    assert isinstance(process, forked.ForkedProcess)
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(0.2)  # reading its standard input, which stays open
    assert process.poll() is None
    process.kill()
    assert process.wait(30) == -signal.SIGKILL
    process.send_signal(signal.SIGTERM)  # no-op once ended, as Popen: the pid may be reused
    assert process.poll() == -signal.SIGKILL


def test_what_a_fork_cannot_honour_starts_a_fresh_interpreter(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hashed = {**os.environ, "PYTHONHASHSEED": "7"}
    fresh = forked.popen([*EVE, "--version"], cwd=tmp_path, env=hashed, stdout=subprocess.DEVNULL)
    assert isinstance(fresh, subprocess.Popen)
    assert fresh.wait(60) == 0
    other = forked.popen([sys.executable, "-S", "-c", "pass"], cwd=tmp_path)
    assert isinstance(other, subprocess.Popen)
    assert other.wait(60) == 0
    monkeypatch.setenv(forked.ENABLED_ENV, "0")
    off = forked.popen([*EVE, "--version"], cwd=tmp_path, stdout=subprocess.DEVNULL)
    assert isinstance(off, subprocess.Popen)
    assert off.wait(60) == 0


def test_the_dbos_of_a_tests_process_polls_sqlite_as_the_forked_ones_do(tmp_path: Path) -> None:
    """The one thing a fork changes on purpose (``SQLITE_POLL_SECONDS``) holds in the test's
    own process too (tests/conftest.py), and is quicker than eve's own second."""
    config = dbos_config(resolve_settings(tmp_path, env={}))
    try:
        assert config["notification_listener_polling_interval_sec"] == SQLITE_POLL_SECONDS < 1
    finally:
        engine = config.get("system_database_engine")
        if engine is not None:
            engine.dispose()
