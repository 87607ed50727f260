"""bash: output and exit codes, caps, the timeout, cancellation — and no process left behind."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import pydantic
import pytest

from eve.authoring.context import ToolContext
from eve.builtins import bash
from eve.builtins._limits import OUTPUT_MAX_BYTES
from tests.builtins.conftest import call

BASH = bash.default
#: what the commands that time out do first (start a child, note its pid) must be done by
#: then: a second and a half, which a loaded machine does not take to start bash
BASH_TIMEOUT = 1.5


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs; a zombie nobody reaped yet (PID 1 in a container) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def gone(pid: int) -> bool:
    """Poll briefly: a killed process disappears asynchronously."""
    for _ in range(100):
        if not alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


async def pid_from(path: Path) -> int:
    for _ in range(500):
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} was never written")


async def test_output_and_exit_code(ctx: ToolContext) -> None:
    result = await call(BASH, ctx, command="echo out; echo err >&2; exit 3")
    assert result == {"exit_code": 3, "status": "exited", "stdout": "out\n", "stderr": "err\n"}


async def test_runs_in_the_workspace_with_empty_stdin(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "here.txt").write_text("")
    result = await call(BASH, ctx, command="pwd; ls; cat")  # cat would hang on a live stdin
    assert result["stdout"] == f"{tmp_path.resolve()}\nhere.txt\n"
    assert result["exit_code"] == 0


async def test_outputs_are_capped_with_a_note(ctx: ToolContext) -> None:
    result = await call(BASH, ctx, command="head -c 100000 /dev/zero | tr '\\0' a; echo -n e >&2")
    assert result["stdout"] == "a" * OUTPUT_MAX_BYTES + (
        f"\n[truncated: showed {OUTPUT_MAX_BYTES:,} of 100,000 bytes]"
    )
    assert result["stderr"] == "e"
    assert result["exit_code"] == 0


async def test_timeout_kills_the_whole_group(tmp_path: Path, ctx: ToolContext) -> None:
    result = await call(
        BASH,
        ctx,
        command="sleep 30 & echo $! > child.pid; echo started; wait",
        timeout_seconds=BASH_TIMEOUT,
    )
    assert result["status"] == "timed_out"
    assert result["exit_code"] == -9
    assert result["stdout"] == "started\n"  # what came before the kill is kept
    assert await gone(int((tmp_path / "child.pid").read_text()))


async def test_cancel_signal_kills_and_says_cancelled(tmp_path: Path, ctx: ToolContext) -> None:
    running = asyncio.create_task(
        call(BASH, ctx, command="echo $$ > shell.pid; sleep 5 & echo $! > child.pid; wait")
    )
    shell, child = await pid_from(tmp_path / "shell.pid"), await pid_from(tmp_path / "child.pid")
    assert alive(child)
    ctx.signal.cancel("user pressed stop")
    result = await running
    assert result["status"] == "cancelled"
    assert result["exit_code"] == -9
    assert await gone(shell)
    assert await gone(child)


async def test_cancelling_the_task_kills_the_group(tmp_path: Path, ctx: ToolContext) -> None:
    running = asyncio.create_task(call(BASH, ctx, command="sleep 5 & echo $! > child.pid; wait"))
    child = await pid_from(tmp_path / "child.pid")
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert await gone(child)


async def test_background_processes_do_not_outlive_the_call(ctx: ToolContext) -> None:
    # Without the group kill, the child would hold stdout open and the call would hang.
    result = await call(BASH, ctx, command="sleep 30 & echo $!", timeout_seconds=20)
    assert result["status"] == "exited"
    assert result["exit_code"] == 0
    assert await gone(int(result["stdout"]))


async def test_a_process_escaping_the_group_is_killed_too(tmp_path: Path, ctx: ToolContext) -> None:
    # Issue 12, finding 8: setsid leaves the process group (and session), so the group kill
    # missed it. The wrapper is a subreaper: the orphan comes back to it and is killed. The
    # shell waits for esc.pid so that the escape has happened before the shell exits.
    command = (
        "setsid bash -c 'echo $$ > esc.pid; exec sleep 1000' & until [ -s esc.pid ]; do :; done"
    )
    result = await call(BASH, ctx, command=command, timeout_seconds=20)
    escaped = int((tmp_path / "esc.pid").read_text())
    try:
        assert result["status"] == "exited"
        assert result["exit_code"] == 0
        assert await gone(escaped)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(escaped, signal.SIGKILL)


async def test_a_process_escaping_the_group_is_killed_on_timeout(
    tmp_path: Path, ctx: ToolContext
) -> None:
    command = "setsid sleep 1000 & echo $! > esc.pid; sleep 1000"
    result = await call(BASH, ctx, command=command, timeout_seconds=BASH_TIMEOUT)
    escaped = int((tmp_path / "esc.pid").read_text())
    try:
        assert result["status"] == "timed_out"
        assert result["exit_code"] == -9
        assert await gone(escaped)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(escaped, signal.SIGKILL)


async def test_already_cancelled_turn_does_not_run_long(ctx: ToolContext) -> None:
    ctx.signal.cancel()
    result = await call(BASH, ctx, command="sleep 5")
    assert result["status"] == "cancelled"


async def test_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    ctx = ToolContext(session_id="s", call_id="c", tool_name="bash", workspace=tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match=r"^the workspace directory does not exist$"):
        await call(BASH, ctx, command="true")


def test_schema_bounds() -> None:
    assert BASH.input_model is not None
    for bad in ({"command": ""}, {"command": "x", "timeout_seconds": 0}, {"command": "x", "x": 1}):
        with pytest.raises(pydantic.ValidationError):
            BASH.input_model.model_validate(bad)


async def test_the_command_cannot_read_eves_credentials(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-should-never-leak-1234")
    monkeypatch.setenv("EVE_TEST_HIDDEN", "yes")
    monkeypatch.setenv("SOME_CLOUD_TOKEN", "tok-1234567890")
    monkeypatch.setenv("LANG", "C.UTF-8")
    result = await call(BASH, ctx, command="env")
    # an allow-list: only PATH, locale, TERM, TZ, TMPDIR, and HOME set to the workspace
    assert "LANG=C.UTF-8" in result["stdout"]
    assert f"HOME={ctx.workspace.resolve()}" in result["stdout"]
    assert "EVE_TEST_HIDDEN" not in result["stdout"]
    assert "SOME_CLOUD_TOKEN" not in result["stdout"]
    assert "ANTHROPIC_API_KEY" not in result["stdout"]
