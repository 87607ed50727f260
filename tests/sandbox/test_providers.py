"""The sandbox as tools meet it: ``ctx.sandbox.run``, ``run_python``, the file tools in the
session's workspace, the seed files, the limits' notes, and the named error where
bubblewrap cannot run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from eve.builtins import bash, run_python, write_file
from eve.cli.main import main
from eve.errors import SandboxUnavailable
from eve.manifest import ROOT_NODE_ID, SandboxEntry
from eve.sandbox.bindings import bind_sandbox
from eve.sandbox.bubblewrap import bwrap_program
from tests.builtins.conftest import call
from tests.conftest import AppFactory
from tests.sandbox.conftest import LIMITS, App

PROVIDERS = ["bubblewrap", "local"]


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    bwrap_program.cache_clear()
    yield
    bwrap_program.cache_clear()


def test_a_missing_bwrap_is_refused_when_the_agent_is_set_up(app: App, no_bwrap: None) -> None:
    entry = SandboxEntry(limits=LIMITS, logical_path="agent/sandbox.py")  # bubblewrap by default
    with pytest.raises(SandboxUnavailable, match="no bwrap is on PATH") as raised:
        bind_sandbox(app.workspace_root, ROOT_NODE_ID, entry, app_root=app.root)
    assert raised.value.provider == "bubblewrap" and raised.value.exit_code == 2
    assert "provider='local'" in str(raised.value)  # the way out, named


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_tool_runs_a_program_through_ctx_sandbox(app: App, provider: str) -> None:
    app.bind(provider)
    sandbox = app.ctx().sandbox
    done = await sandbox.run(["sh", "-c", 'echo "$HOME" && pwd'])
    assert (done.exit_code, done.status, done.stderr) == (0, "exited", "")
    assert done.stdout == f"{sandbox.workspace_path}\n" * 2
    with pytest.raises(ValueError, match="argv is empty"):
        await sandbox.run([])


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_run_python_runs_in_the_workspace(app: App, provider: str) -> None:
    app.bind(provider)
    code = "import pathlib; pathlib.Path('out.txt').write_text('42'); print(sum(range(10)))"
    done = await call(run_python.default, app.ctx(), code=code)
    assert (done["exit_code"], done["stdout"]) == (0, "45\n")
    assert (app.session_dir("session-a") / "out.txt").read_text() == "42"


async def test_what_the_file_tools_write_a_sandboxed_command_may_change(app: App) -> None:
    app.bind("bubblewrap")
    await call(write_file.default, app.ctx(), path="notes/a.txt", content="one\n")
    done = await call(bash.default, app.ctx(), command="echo two >> notes/a.txt && mkdir notes/b")
    assert done["exit_code"] == 0, done
    assert (app.session_dir("session-a") / "notes" / "a.txt").read_text() == "one\ntwo\n"


async def test_a_new_session_starts_from_the_seed_files(app: App) -> None:
    seed = app.root / "agent" / "sandbox" / "workspace" / "data" / "prices.csv"
    seed.parent.mkdir(parents=True)
    seed.write_text("hammer,12\n")
    entry = SandboxEntry(
        provider="local",
        limits=LIMITS,
        workspace_files=["agent/sandbox/workspace/data/prices.csv"],
        logical_path="agent/sandbox.py",
    )
    bind_sandbox(app.workspace_root, ROOT_NODE_ID, entry, app_root=app.root)
    done = await call(bash.default, app.ctx("fresh"), command="cat data/prices.csv")
    assert done["stdout"] == "hammer,12\n"


async def test_memory_past_the_limit_fails_the_allocation(app: App) -> None:
    app.bind("bubblewrap", memory_mb=200)
    done = await call(run_python.default, app.ctx(), code="x = bytearray(400 * 1024 * 1024)")
    assert done["exit_code"] == 1 and "MemoryError" in done["stderr"]


async def test_the_wall_time_limit_caps_the_timeout_asked_for(app: App) -> None:
    app.bind("bubblewrap", wall_seconds=1)
    done = await call(bash.default, app.ctx(), command="sleep 30", timeout_seconds=600)
    assert done["status"] == "timed_out" and done["exit_code"] < 0  # killed by a signal


async def test_a_cancelled_turn_kills_the_sandboxed_command(app: App) -> None:
    app.bind("bubblewrap")
    ctx = app.ctx()
    running = asyncio.ensure_future(call(bash.default, ctx, command="touch started; sleep 30"))
    started = app.session_dir("session-a") / "started"
    while not started.exists():  # the command is running inside the sandbox
        await asyncio.sleep(0.01)
    ctx.signal.cancel("cancelled")
    done = await running
    assert done["status"] == "cancelled"


def test_eve_run_refuses_to_start_without_bubblewrap(make_app: AppFactory, no_bwrap: None) -> None:
    root = make_app(
        {
            "agent/agent.py": """
                from eve import define_agent
                default = define_agent(model="offline/test", builtin_tools=["bash"])
            """,
            "agent/sandbox.py": """
                from eve.sandbox import define_sandbox
                default = define_sandbox()
            """,
        }
    )
    result = CliRunner().invoke(main, ["-C", str(root), "run", "hi"])
    assert result.exit_code == SandboxUnavailable.exit_code, result.output
    assert "no bwrap is on PATH" in result.output
