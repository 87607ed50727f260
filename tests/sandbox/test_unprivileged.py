"""The bubblewrap provider when eve is not root: bwrap in a user namespace of its own.

The suite runs as root, where bwrap runs without a user namespace and ``setpriv`` drops
the command to nobody (tests/sandbox/test_escapes.py). Here a whole Python process runs as
uid/gid 65534 instead (``unprivileged_probes.py``, once for the module), so bwrap takes
its other path, and the escape probes run through ``Sandbox.run`` from there. Each test
judges one probe's result.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.conftest import require_bubblewrap

USER = 65534
SECRET = "sk-unprivileged-probe"
_CHECKOUT = Path(__file__).resolve().parents[2]
_PROBES = Path(__file__).with_name("unprivileged_probes.py")


def _as_user(
    argv: list[str], env: dict[str, str], **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    # user=/group= switch in the child before the exec, so even the exec is the user's
    return subprocess.run(
        argv,
        env=env,
        user=USER,
        group=USER,
        extra_groups=[],
        capture_output=True,
        text=True,
        check=False,
        **kwargs,
    )


def _interpreter(env: dict[str, str]) -> str:
    """A Python the user can run eve from: this one, or (when it lives where the user
    cannot reach, as under /root) the system's of the same version, which loads the same
    packages."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [sys.executable, f"/usr/bin/{version}"]
    refusals = []
    for python in candidates:
        try:
            done = _as_user(
                [python, "-c", "import eve.sandbox.provider, tests.sandbox.conftest"], env, cwd="/"
            )
        except (PermissionError, FileNotFoundError) as error:
            refusals.append(f"{python}: {error}")
            continue
        if done.returncode == 0:
            return python
        last_line = done.stderr.strip().splitlines()[-1:]
        refusals.append(f"{python}: {' '.join(last_line) or done.returncode}")
    pytest.skip(f"no Python with eve's packages is readable by uid {USER}: {'; '.join(refusals)}")


def _skip_unless_root() -> None:
    if os.geteuid() != 0:
        pytest.skip(
            f"only root can start a process as uid {USER} (this runs as uid {os.geteuid()})"
        )


def _skip_without_user_namespaces(env: dict[str, str]) -> None:
    require_bubblewrap()
    bwrap = shutil.which("bwrap") or "bwrap"
    probe = [bwrap, "--unshare-user", "--ro-bind", "/", "/", "true"]
    done = _as_user(probe, env, cwd="/")
    if done.returncode != 0:
        pytest.skip(f"the kernel refuses uid {USER} a user namespace: {done.stderr.strip()}")


@pytest.fixture(scope="module")
def probed() -> Iterator[dict[str, Any]]:
    """What the probes returned, run once as the user in a scratch directory of its own."""
    _skip_unless_root()
    scratch = Path(tempfile.mkdtemp(prefix="eve-unprivileged-"))
    try:
        os.chown(scratch, USER, USER)
        paths = [str(_CHECKOUT), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(scratch),
            "LANG": "C.UTF-8",
            "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
            "PYTHONDONTWRITEBYTECODE": "1",  # the checkout is root's: nothing to write there
            "EVE_PROBE_API_KEY": SECRET,  # what a leak of eve's environment would show
        }
        _skip_without_user_namespaces(env)
        python = _interpreter(env)
        done = _as_user([python, str(_PROBES), str(scratch)], env, cwd=scratch, timeout=60)
        assert done.returncode == 0, done.stderr
        found: dict[str, Any] = json.loads(done.stdout)
        assert found["uid"] == USER
        yield found
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _result(probed: dict[str, Any], name: str) -> dict[str, Any]:
    result: dict[str, Any] = probed["results"][name]
    assert result["status"] == "exited", result
    return result


def test_the_command_runs_as_the_user_with_no_capabilities(probed: dict[str, Any]) -> None:
    done = _result(probed, "who")
    assert done["stdout"] == f"{USER}\nCapEff:\t0000000000000000\n/workspace\n", done


def test_eves_own_threads_are_not_counted_against_the_process_limit(
    probed: dict[str, Any],
) -> None:
    # RLIMIT_NPROC counts per user: set before bwrap, eve's threads would use it all up and
    # bwrap would fail to make its namespaces (eve.sandbox.bubblewrap's docstring)
    assert probed["threads"] > probed["processes"]
    assert _result(probed, "who")["exit_code"] == 0


def test_eves_environment_and_processes(probed: dict[str, Any]) -> None:
    done = _result(probed, "environment")
    assert SECRET not in done["stdout"]
    assert "EVE_PROBE_API_KEY" not in done["stdout"]
    # a PID namespace of its own: the probing process's /proc entry is not there to read
    assert f"/proc/{probed['pid']}/environ: No such file or directory" in done["stderr"], done


def test_writing_outside_the_workspace(probed: dict[str, Any]) -> None:
    done = _result(probed, "write_outside")
    assert not probed["planted"], "a command wrote outside its workspace"
    assert f"{probed['outside']}: No such file or directory" in done["stderr"], done
    assert "Read-only file system" in done["stderr"], done
    # and the workspace itself is writable
    assert probed["mine"] == "mine\n"


def test_the_network(probed: dict[str, Any]) -> None:
    done = _result(probed, "network")
    assert done["stdout"] == "" and "Connection refused" in done["stderr"], done
    # the same probe reaches the listener when the sandbox shares the network
    assert _result(probed, "network_allowed")["stdout"] == "connected\n"


def test_another_sessions_files(probed: dict[str, Any]) -> None:
    done = _result(probed, "other_session")
    assert done["stdout"] == "", done
    assert done["stderr"].count("No such file or directory") == 2, done
    # the file is there to read for a command that is not sandboxed
    assert _result(probed, "other_session_local")["stdout"] == "private\n"


def test_a_fork_bomb(probed: dict[str, Any]) -> None:
    done = _result(probed, "fork_bomb")
    assert "Resource temporarily unavailable" in done["stderr"], done
    assert "forked" not in done["stdout"]
