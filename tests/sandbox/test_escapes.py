"""Every escape the probes try, against each provider: bubblewrap stops it and the tool's
result says why; ``local`` is shown letting it through (what docs/sandbox.md warns of).

Each probe is one ``bash`` call through the built-in tool, as the model would make it.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eve.builtins import bash, read_file
from eve.errors import WorkspaceViolation
from tests.builtins.conftest import call
from tests.sandbox.conftest import FORK_BOMB, App

PROVIDERS = ["bubblewrap", "local"]


async def run(app: App, command: str, session: str = "session-a", **data: Any) -> dict[str, Any]:
    result: dict[str, Any] = await call(bash.default, app.ctx(session), command=command, **data)
    return result


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest, app: App) -> str:
    app.bind(request.param)
    return str(request.param)


async def test_the_workspace_is_the_sessions_own_and_writable(app: App, provider: str) -> None:
    done = await run(app, "echo made > made.txt && cat made.txt && pwd")
    assert done["exit_code"] == 0, done
    assert (app.session_dir("session-a") / "made.txt").read_text() == "made\n"
    inside = "/workspace" if provider == "bubblewrap" else str(app.session_dir("session-a"))
    assert done["stdout"] == f"made\n{inside}\n"


async def test_eves_environment_and_processes(
    app: App, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVE_PROBE_API_KEY", "sk-probe-secret")
    done = await run(app, f"env; cat /proc/{os.getpid()}/environ | tr '\\0' '\\n' | head -3")
    # neither passes eve's environment on: bubblewrap builds it from nothing, local lists it
    assert "sk-probe-secret" not in done["stdout"]
    if provider == "bubblewrap":
        # a PID namespace of its own: eve's /proc entry is not there to read
        assert "No such file or directory" in done["stderr"]
    else:
        # local: eve's environment block is readable (its secrets blanked, the rest shown)
        assert done["stderr"] == ""


async def test_another_sessions_files(app: App, provider: str) -> None:
    await run(app, "echo private > notes.txt", session="session-b")
    other = app.session_dir("session-b") / "notes.txt"
    done = await run(app, f"cat ../session-b/notes.txt; cat {other}")
    if provider == "bubblewrap":
        assert done["stdout"] == ""
        assert done["stderr"].count("No such file or directory") == 2
    else:
        assert done["stdout"] == "private\nprivate\n"


async def test_the_apps_eve_and_agent_directories(app: App, provider: str) -> None:
    done = await run(app, f"cat {app.root}/.eve/sessions.db {app.root}/agent/secret.txt")
    if provider == "bubblewrap":
        assert done["stdout"] == "" and "No such file or directory" in done["stderr"]
    else:
        assert done["stdout"] == "every session's messages\nagent code\n"


async def test_writing_outside_the_workspace(app: App, provider: str) -> None:
    planted = app.root / "agent" / "planted.py"
    done = await run(app, f"echo 'import os' > {planted}")
    if provider == "bubblewrap":
        assert not planted.exists()
        assert "No such file or directory" in done["stderr"]
        # the system is there, read-only (never probed under local: it would write there)
        done = await run(app, "touch /usr/bin/planted")
        assert "Read-only file system" in done["stderr"]
    else:
        assert planted.read_text() == "import os\n"


async def test_a_hard_link_to_a_file_outside(app: App, provider: str) -> None:
    target = app.root / "agent" / "secret.txt"
    done = await run(app, f"ln {target} linked.txt; ln /etc/hostname host.txt; cat linked.txt")
    if provider == "bubblewrap":
        # the outside file is not there; a system file is on another mount (EXDEV)
        assert "No such file or directory" in done["stderr"]
        assert "Invalid cross-device link" in done["stderr"]
        assert not (app.session_dir("session-a") / "linked.txt").exists()
    else:
        assert done["stdout"] == "agent code\n"
        # the file tools still refuse it: nothing in a hard link says where the other is
        with pytest.raises(WorkspaceViolation):
            await call(read_file.default, app.ctx(), path="linked.txt")


async def test_a_symlink_to_a_file_outside(app: App, provider: str) -> None:
    done = await run(app, f"ln -s {app.root}/agent/secret.txt link.txt && cat link.txt")
    if provider == "bubblewrap":
        assert done["stdout"] == "" and "No such file or directory" in done["stderr"]
    else:
        assert done["stdout"] == "agent code\n"
    # either way the file tools walk it and refuse (tests/builtins/test_races.py races it)
    with pytest.raises(WorkspaceViolation, match="symlink"):
        await call(read_file.default, app.ctx(), path="link.txt")


def _running(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(name))
    return found


async def test_a_setsid_daemon_does_not_outlive_the_call(app: App, provider: str) -> None:
    # a sleep of a length no other process asks for names it among the host's processes
    marker = f"{os.getpid() % 1000 + 1000}.{len(provider)}71"
    done = await run(app, f"setsid sleep {marker} > /dev/null 2>&1 < /dev/null & echo started")
    assert done["stdout"] == "started\n"
    # both stop it: bubblewrap's PID namespace dies with the command (the kernel kills what
    # is left in it as its first process ends, a moment after bwrap reports the exit),
    # local's reaper kills it before the call returns
    assert await _gone(f"sleep\0{marker}"), "the daemon outlived the call"


async def _gone(marker: str) -> bool:
    for _ in range(200):
        if not _running(marker):
            return True
        await asyncio.sleep(0.01)
    return False


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


async def test_the_network(app: App, provider: str, listener: int) -> None:
    done = await run(app, f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo connected")
    if provider == "bubblewrap":
        # a network namespace of its own: eve's loopback is not its loopback
        assert done["stdout"] == "" and "Connection refused" in done["stderr"]
    else:
        assert done["stdout"] == "connected\n"


async def test_a_shared_network_is_the_hosts(app: App, listener: int) -> None:
    app.bind("bubblewrap", network=True)
    done = await run(app, f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo connected")
    assert done["stdout"] == "connected\n", done


_FORK_BOMB = f"python3 -c '{FORK_BOMB}'"


async def test_a_fork_bomb(app: App, provider: str) -> None:
    app.bind(provider, processes=40)
    done = await run(app, _FORK_BOMB, timeout_seconds=20)
    if provider == "bubblewrap":
        assert "Resource temporarily unavailable" in done["stderr"]
        assert "forked" not in done["stdout"]
    else:
        assert done["stdout"] == "forked 100\n"


async def test_filling_the_disk(app: App, provider: str) -> None:
    app.bind(provider, file_size_mb=1)
    done = await run(app, "head -c 3000000 /dev/zero > big; echo $?")
    written = (app.session_dir("session-a") / "big").stat().st_size
    if provider == "bubblewrap":
        assert written == 1024 * 1024
        assert "File size limit exceeded" in done["stderr"]
    else:
        assert written == 3_000_000


async def test_a_busy_loop_meets_the_cpu_limit(app: App) -> None:
    app.bind("bubblewrap", cpu_seconds=1)
    done = await call(
        bash.default, app.ctx(), command="exec python3 -c 'while True: pass'", timeout_seconds=20
    )
    assert done["status"] == "exited"
    assert done["note"] == "a process was stopped at the sandbox's CPU time limit (1 s)"
