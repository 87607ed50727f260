"""Run one command to its end, bounded in time and output: what every sandbox provider shares.

The command runs in a session (and process group) of its own with stdin empty; its stdout
and stderr are captured up to a cap each. It ends by itself, by the timeout or by the
turn's cancel signal; in the last two cases it is asked to stop (SIGTERM, which the
``local`` provider's reaper and bwrap both turn into killing everything below) and then
its whole group is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from eve._cancellation import CancelSignal
from eve.builtins._limits import OUTPUT_MAX_BYTES, capped_text

Status = Literal["exited", "timed_out", "cancelled"]

#: how long output may keep flowing after the process group is dead (a process that left
#: the group can hold the pipes open forever)
_DRAIN_GRACE_SECONDS = 1.0
#: how long the wrapper has to kill what the command started before its group is killed
_STOP_GRACE_SECONDS = 5.0


@dataclass(frozen=True, kw_only=True)
class CommandResult:
    """How a command ended and what it wrote."""

    #: its exit status; negative: killed by that signal (after a timeout or a cancel, too)
    exit_code: int | None
    status: Status
    stdout: str
    stderr: str
    #: why a sandbox limit stopped it (CPU time, file size), when one did
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "exit_code": self.exit_code,
            "status": self.status,
            "stdout": self.stdout,
            "stderr": self.stderr,
        }
        return shown if self.note is None else {**shown, "note": self.note}


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


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    cancel: CancelSignal,
    explain: Callable[[int | None], str | None] = lambda code: None,
) -> CommandResult:
    """Run ``argv`` to its end (or the timeout, or the cancel); ``explain`` turns its exit
    status into a note when a limit caused it."""
    with contextlib.ExitStack() as pipes:
        with contextlib.ExitStack() as child_ends:
            stdout_fd, stdout = await _open_pipe(pipes, child_ends)
            stderr_fd, stderr = await _open_pipe(pipes, child_ends)
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                stdin=asyncio.subprocess.DEVNULL,  # nothing can answer a prompt: fail, not hang
                stdout=stdout_fd,
                stderr=stderr_fd,
                start_new_session=True,
                env=dict(env),
            )
        # Our copies of the write ends are closed now: kept, they would stop EOF ever coming.
        try:
            status = await _outlast(process, cancel, timeout)
        finally:
            # Also when this task itself is cancelled: nothing the command started survives it.
            await _stop(process)
            # Output written before the kill is still in the pipes; read it to the end.
            await asyncio.wait([stdout.closed, stderr.closed], timeout=_DRAIN_GRACE_SECONDS)
    code = process.returncode
    return CommandResult(
        exit_code=code,
        status=status,
        stdout=stdout.text(),
        stderr=stderr.text(),
        note=explain(code) if status == "exited" else None,
    )
