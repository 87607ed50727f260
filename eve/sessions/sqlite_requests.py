"""Requests waiting for eve's SQLite file, seen by every process on it: a request's claim
first across workers, as ``sqlite_gate.SqliteGate`` puts it first within one.

With two workers on one file, a message's claim that found the other worker holding the
file waited for a moment when it was free, while that worker's writer lane took it again
after each group (``group_commit.py``): at 1,000 sessions 16 % of the claims waited past
25 ms, and their POSTs made the p95 (164 ms a claim, 223 to 575 ms a POST). Nothing told
the other worker that a request waited. Now a claim that waits for the file says so here
(``claim_now.LoopClaims.marked``), and every worker's background transactions let it go
first: a group ends after the write it is running (``SqliteGate.requests_waiting``) and
the next waits, 10 ms at most (``SqliteGate``'s ``request_patience``), until no claim
waits. Only claims say so: a stream's reads are a request's too, and at 1,000 sessions
they come all the time.

How it is said: a lock file beside eve's file (``<file>-requests``). A process marks its
waiting claims with a read lock on the file's first byte through one open file
description (an open file description lock, ``F_OFD_SETLK``: Linux's, released with the
description, so by the kernel when its process dies, however it dies); anyone looks with
``F_OFD_GETLK`` through another, which takes no lock, so a look never stands in a mark's
way. Both calls go to the C library with the interpreter's lock held (``ctypes.PyDLL``):
``fcntl.fcntl`` lets the lock go around the call, and a writer lane that looks after each
write, the file held, would then wait for the lock to come back behind the event loop (a
hold of 1 ms at the median was 15 to 17 ms at p95 for that). The calls never block.

A process forked from one that has the file open shares its open file descriptions, and so
its marks: a mark would outlive its process, killed while a request waited, for as long as
a child it forked lives. Both descriptors are close-on-exec (a ``subprocess`` drops them as
its program starts) and a forked child closes its copies at once (``os.register_at_fork``):
closing is sound where unlocking is not, since a lock let go through a shared description
is the parent's own, let go. The child has no signal then (a store's engine is not carried
across a fork either).

It only orders: SQLite's own lock still decides who writes, so a process without it (an
``eve sessions`` command, an older eve) writes as before, and where open file description
locks are missing (not Linux) there is no signal at all. Each process also holds a shared
``flock`` on the file while it has it open; the last to close it (an exclusive one taken
at once) removes it, so the sessions' folder holds only the databases when no one runs.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

#: the lock file's name beside eve's file
SUFFIX = "-requests"


class _Flock(ctypes.Structure):
    # ``struct flock`` (fcntl.h) on Linux
    _fields_ = (
        ("l_type", ctypes.c_short),
        ("l_whence", ctypes.c_short),
        ("l_start", ctypes.c_int64),
        ("l_len", ctypes.c_int64),
        ("l_pid", ctypes.c_int),
    )


def _c_fcntl() -> Callable[..., int] | None:
    """The C library's ``fcntl`` called with the interpreter's lock held, where open file
    description locks exist."""
    if not hasattr(fcntl, "F_OFD_GETLK"):
        return None
    call = ctypes.PyDLL(None, use_errno=True).fcntl
    call.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Flock))
    call.restype = ctypes.c_int
    return call


_FCNTL = _c_fcntl()


class RequestSignal:
    """Whether a request of any process waits for eve's file (``waiting``), and this
    process's own requests marked there (``marked``)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._marks = 0
        self._lock = threading.Lock()
        self._holds = _open_present(path)
        # another open file description of the same file: a look through it sees the
        # marks of this process's own (``F_OFD_GETLK`` reports no lock of its own)
        self._looks = os.open(f"/proc/self/fd/{self._holds}", os.O_RDWR | os.O_CLOEXEC)
        self.closed = False
        _open_signals.add(self)

    @property
    def waiting(self) -> bool:
        """A request of some process (this one too) waits for the file now."""
        if self.closed:
            return False
        probe = _Flock(l_type=fcntl.F_WRLCK, l_whence=os.SEEK_SET, l_start=0, l_len=1)
        try:
            _call(self._looks, fcntl.F_OFD_GETLK, probe)
        except OSError:
            return False  # (closed meanwhile) the signal only orders: go on as without it
        return bool(probe.l_type != fcntl.F_UNLCK)

    @contextmanager
    def marked(self) -> Iterator[None]:
        """A request of this process waits for the file (or holds it) for the block."""
        self._mark(+1)
        try:
            yield
        finally:
            self._mark(-1)

    def _mark(self, step: int) -> None:
        with self._lock:
            if self.closed:
                return
            self._marks += step
            if (step > 0 and self._marks == 1) or self._marks == 0:
                kind = fcntl.F_RDLCK if self._marks else fcntl.F_UNLCK
                # no one takes a write lock here, so a read lock is never refused
                lock = _Flock(l_type=kind, l_whence=os.SEEK_SET, l_start=0, l_len=1)
                with suppress(OSError):  # the signal only orders: go on as without it
                    _call(self._holds, fcntl.F_OFD_SETLK, lock)

    def close(self) -> None:
        """Close the file; remove it if no other process has it open."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            _open_signals.discard(self)
            try:
                fcntl.flock(self._holds, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                pass  # another process has it open
            else:
                if _same_file(self._holds, self.path):
                    with suppress(OSError):
                        os.unlink(self.path)
            os.close(self._looks)
            os.close(self._holds)

    def _drop_in_child(self) -> None:
        """In a forked child: close this process's copies of the parent's descriptors,
        leaving its marks to it. Not under ``_lock``: a thread of the parent may have held
        it as the process forked, and no thread of the child has."""
        self._lock = threading.Lock()
        if not self.closed:
            self.closed = True
            os.close(self._looks)
            os.close(self._holds)


#: the signals this process has open, for its forked children to close
_open_signals: weakref.WeakSet[RequestSignal] = weakref.WeakSet()


def _close_in_child() -> None:
    for signal in list(_open_signals):
        signal._drop_in_child()
    _open_signals.clear()


os.register_at_fork(after_in_child=_close_in_child)


def request_signal(database: str | None) -> RequestSignal | None:
    """The signal beside the SQLite file ``database`` (a path), or None where there can be
    none: no file (``:memory:``), no open file description locks, a file that cannot be
    made (a read-only folder)."""
    if _FCNTL is None or not database or database == ":memory:":
        return None
    try:
        return RequestSignal(database + SUFFIX)
    except OSError:
        return None


def _call(fd: int, command: int, lock: _Flock) -> None:
    assert _FCNTL is not None
    if _FCNTL(fd, command, ctypes.byref(lock)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def _open_present(path: str) -> int:
    """``path`` opened (made if missing) with a shared ``flock`` held: this process has it
    open. Opened again if its last closer removed it meanwhile, so every process holds the
    same file."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            # a closer holds the exclusive lock only to remove the file
            fcntl.flock(fd, fcntl.LOCK_SH)
            if _same_file(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _same_file(fd: int, path: str) -> bool:
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)
