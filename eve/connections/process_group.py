"""Ending a stdio MCP server's whole process group when its connection closes.

The SDK starts a stdio server as the leader of a new session (``start_new_session``) and,
on close, shuts its stdin and waits; it kills the group only when the leader outlives that
wait. A server that exits at once on end of input leaves any worker it started running.
eve starts the command through ``/bin/sh``, which writes its pid (the group's id: the
leader's pid) to a file and ``exec``s the command (same pid, same environment and working
directory), so that eve knows the group and ends it after the SDK's close.

A process of the group that ends after its leader is an orphan: its parent is then the
system's init, which may reap it late (a second or two in some containers). Until then
the group still answers a signal, so on Linux the group counts as ended when only zombies
are left of it (``/proc``), rather than waiting out ``TERM_SECONDS`` for a dead process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
from pathlib import Path

from eve._proc_stat import stat_fields

#: ``$0`` is the pid file, the rest is the command: exec keeps the pid the SDK started
_LAUNCH = 'echo $$ > "$0" && exec "$@"'
SHELL = "/bin/sh"
#: how long the group has after SIGTERM before what is left of it is killed
TERM_SECONDS = 2.0


class ProcessGroup:
    """The group one stdio server leads: ``wrap`` its command, ``end`` it after close."""

    def __init__(self) -> None:
        handle, path = tempfile.mkstemp(prefix="eve-mcp-", suffix=".pid")
        os.close(handle)
        self.pid_file = Path(path)

    def wrap(self, command: str, args: list[str]) -> tuple[str, list[str]]:
        return SHELL, ["-c", _LAUNCH, str(self.pid_file), command, *args]

    async def end(self) -> None:
        try:
            text = self.pid_file.read_text().strip()
        except OSError:
            return
        finally:
            self.pid_file.unlink(missing_ok=True)
        if not text.isdigit():
            return  # the shell never ran (the command could not start)
        group = int(text)
        if not _signal(group, signal.SIGTERM):
            return
        deadline = asyncio.get_running_loop().time() + TERM_SECONDS
        while asyncio.get_running_loop().time() < deadline:
            if not _signal(group, 0) or not has_living_member(group):
                return
            await asyncio.sleep(0.02)
        _signal(group, signal.SIGKILL)


def _signal(group: int, number: int) -> bool:
    """Send ``number`` to the group; False when no process of it is left."""
    try:
        os.killpg(group, number)
    except ProcessLookupError:
        return False
    except PermissionError:
        # the group's id was taken by a process that is not ours: nothing of ours is left
        return False
    with contextlib.suppress(ChildProcessError):
        # reap a zombie leader of ours, or signal 0 keeps finding it
        while os.waitpid(-group, os.WNOHANG)[0]:
            pass
    return True


def has_living_member(group: int) -> bool:
    """Whether a process of ``group`` is left that is not a zombie; without ``/proc``
    (not Linux) nothing tells them apart, so any process counts."""
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, _, pgrp = stat_fields(entry.name)[:3]  # state, ppid, pgrp
        except OSError:  # the process ended while we looked
            continue
        if int(pgrp) == group and state != b"Z":
            return True
    return False
