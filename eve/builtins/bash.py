"""The built-in ``bash`` tool: run a shell command in the workspace, bounded in time and output.

The command runs under a small wrapper (``_reaper.py``) in a session (and process group)
of its own. The wrapper is a child subreaper: everything the command starts, even with
``setsid`` out of the group, is killed when the command ends, times out or the turn is
cancelled — a process left running in the background would otherwise outlive the call
unseen. The command's environment is an allow-list (``_process_environ``), HOME is the
workspace, and eve's own environment block in /proc no longer shows its secrets. The
working directory is the workspace, but a shell is not confined by it: that is why every
call needs a person's approval (docs/security.md says what it can still reach).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any, Literal

import pydantic

from eve.authoring.context import ToolContext
from eve.builtins._limits import OUTPUT_MAX_BYTES, capped_text
from eve.builtins._process_environ import command_environment, hide_secrets_from_proc
from eve.cancellation import CancelSignal
from eve.tools import define_tool
from eve.tools.approval import always

Status = Literal["exited", "timed_out", "cancelled"]

#: how long output may keep flowing after the process group is dead (a process that left
#: the group can hold the pipes open forever)
_DRAIN_GRACE_SECONDS = 1.0
#: how long the wrapper has to kill what the command started before its group is killed
_STOP_GRACE_SECONDS = 5.0
_REAPER = str(Path(__file__).with_name("_reaper.py"))


class BashInput(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    command: str = pydantic.Field(min_length=1, description="Run with `bash -c` in the workspace.")
    timeout_seconds: float = pydantic.Field(
        default=30.0, gt=0, le=600, description="Kill the command after this many seconds."
    )


class _Capture(asyncio.Protocol):
    """One output pipe: keeps its first bytes up to the cap and counts the rest.

    It reads on past the cap because a writer blocked on a full pipe would never exit.
    """

    def __init__(self) -> None:
        self.kept = bytearray()
        self.total = 0
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.total += len(data)
        self.kept += data[: max(0, OUTPUT_MAX_BYTES - len(self.kept))]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def text(self) -> str:
        return capped_text(bytes(self.kept), self.total, OUTPUT_MAX_BYTES)


async def _open_pipe(
    ours: contextlib.ExitStack, child_ends: contextlib.ExitStack
) -> tuple[int, _Capture]:
    """A pipe whose read end feeds a ``_Capture``; returns the write end for the child.

    The pipes are ours, not ``asyncio.subprocess.PIPE``, so that they can be closed even
    while a process that escaped the kill still holds them, and so that ``process.wait()``
    returns at the exit (on Python 3.11 it also waits for the PIPEs to reach EOF).
    """
    read_end, write_end = os.pipe()
    child_ends.callback(os.close, write_end)
    reader = ours.enter_context(os.fdopen(read_end, "rb", buffering=0))
    capture = _Capture()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: capture, reader)
    ours.callback(transport.close)
    return write_end, capture


async def _outlast(
    process: asyncio.subprocess.Process, cancel: CancelSignal, timeout: float
) -> Status:
    """Wait for the process to exit, the turn to be cancelled or the timeout, whichever first."""
    exited = asyncio.ensure_future(process.wait())
    cancelled = asyncio.ensure_future(cancel.wait())
    try:
        done, _ = await asyncio.wait(
            {exited, cancelled}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        exited.cancel()
        cancelled.cancel()
    if exited in done:
        return "exited"
    return "cancelled" if cancelled in done else "timed_out"


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Ask the wrapper to kill the command and all it started, then kill what is left."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(process.wait()), _STOP_GRACE_SECONDS)
    _kill_group(process)
    await process.wait()


def _kill_group(process: asyncio.subprocess.Process) -> None:
    # Nothing to kill when the whole group is gone (macOS says EPERM for a group of zombies).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def bash(data: BashInput, ctx: ToolContext) -> dict[str, Any]:
    workspace = ctx.workspace.resolve()
    if not workspace.is_dir():
        raise FileNotFoundError("the workspace directory does not exist")
    hide_secrets_from_proc()
    with contextlib.ExitStack() as pipes:
        with contextlib.ExitStack() as child_ends:
            stdout_fd, stdout = await _open_pipe(pipes, child_ends)
            stderr_fd, stderr = await _open_pipe(pipes, child_ends)
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",  # isolated: no PYTHON* variables, no user site, not even the cwd
                "-S",  # no site: the wrapper needs the standard library alone, and fast
                _REAPER,
                data.command,
                cwd=workspace,
                stdin=asyncio.subprocess.DEVNULL,  # nothing can answer a prompt: fail, not hang
                stdout=stdout_fd,
                stderr=stderr_fd,
                start_new_session=True,
                env=command_environment(workspace),
            )
        # Our copies of the write ends are closed now: kept, they would stop EOF ever coming.
        try:
            status = await _outlast(process, ctx.signal, data.timeout_seconds)
        finally:
            # Also when this task itself is cancelled: nothing the command started survives it.
            await _stop(process)
            # Output written before the kill is still in the pipes; read it to the end.
            await asyncio.wait([stdout.closed, stderr.closed], timeout=_DRAIN_GRACE_SECONDS)
    return {
        "exit_code": process.returncode,
        "status": status,
        "stdout": stdout.text(),
        "stderr": stderr.text(),
    }


default = define_tool(
    description=f"""
        Run a bash command with the workspace as working directory; stdin is empty.
        Returns exit_code, stdout and stderr (each cut at {OUTPUT_MAX_BYTES // 1024} KiB
        with a note) and status: "exited", "timed_out" or "cancelled" — the last two mean
        the command and everything it started were killed (exit_code -9). Background
        processes (even ones started with setsid) are killed when the command exits. The
        environment holds PATH, locale and TERM only; HOME is the workspace. Needs approval
        for every call.
    """,
    input_schema=BashInput,
    execute=bash,
    approval=always(),
    # it changes the workspace the step's other calls read: it runs alone, in its turn
    parallel=False,
)
