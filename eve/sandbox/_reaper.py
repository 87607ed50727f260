"""Run a command so that nothing it starts outlives it: the ``local`` sandbox's wrapper.

Run as a script (``python -I -S _reaper.py PROGRAM ARG...``), not imported: it must start
fast and use the standard library alone. The sandbox kills the command's process group, but
``setsid cmd &`` leaves the group (and the session). So this process makes itself a *child
subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): every process orphaned below it is
re-parented to it instead of to init, and when the command ends — or on SIGTERM, which the tool
sends on timeout or cancellation — it kills its children until it has none left. Then it
exits as the command did (the same code, or killed by the same signal).

Where prctl is missing (macOS), the process group kill in the tool is all there is.
It imports ``_signal``, not ``signal``, and no ``contextlib``: ``signal`` pulls in ``enum``,
which tripled the wrapper's start-up time, and every bash call pays it.
"""

# ruff: noqa: SIM105  (try/except/pass: contextlib would cost start-up time on every call)

from __future__ import annotations

import _signal as signal  # type: ignore[import-not-found]  # no stubs for the C module
import ctypes
import os
import sys

_PR_SET_CHILD_SUBREAPER = 36


def _stop(signum: int, frame: object) -> None:
    # Raised, not a flag: Python retries an interrupted waitpid unless the handler raises.
    # A built-in class, so the package defines no exception outside eve's one tree.
    raise InterruptedError("SIGTERM: end the command now")


def _become_subreaper() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _listed_children(me: int) -> list[int]:
    # CONFIG_PROC_CHILDREN, proc(5): one read instead of a scan, but it can miss a child
    # that is being re-parented, so an empty answer is checked by the scan below
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as children:
            return [int(pid) for pid in children.read().split()]
    except OSError:
        return []


def _scanned_children(me: int) -> list[int]:
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == me:
            found.append(int(name))
    return found


def _kill_everything() -> None:
    """Kill every child until there is none: an orphan re-parents here when its parent dies,
    so each death is followed by a fresh look."""
    me = os.getpid()
    while True:
        children = _listed_children(me) or _scanned_children(me)
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            # block only when there is a killed child to wait for
            os.waitpid(-1, 0 if children else os.WNOHANG)
        except ChildProcessError:
            return


def _exit_as(status: int) -> None:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL has no handler to reset
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def main() -> None:
    _become_subreaper()
    signal.signal(signal.SIGTERM, _stop)
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            os.execvp(sys.argv[1], sys.argv[1:])
        finally:
            os._exit(127)  # the program is not installed
    status = None
    try:
        _, status = os.waitpid(pid, 0)
    except InterruptedError:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # nothing stops the cleanup half-way
    if status is None:
        _, status = os.waitpid(pid, 0)
    _kill_everything()
    _exit_as(status)


if __name__ == "__main__":
    main()
