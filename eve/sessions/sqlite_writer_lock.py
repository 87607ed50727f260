"""Eve's SQLite file handed from one worker's writer to another's the moment it is let go:
a lock the waiting worker sleeps on in the kernel.

With two workers on one file (``eve serve --workers 2``) each worker's writer lane found the
other's holding the file about once per group of the turns' writes, and took SQLite's lock
by trying ``BEGIN IMMEDIATE`` again after pauses of 0.1 to 2 ms (``take_write_lock``; SQLite's
own busy handler sleeps longer). A file let go during a pause lay free until it ended, and
each try took the worker's interpreter lock back from its event loop, to be refused again:
at 1,000 sessions a lane waited 0.18 to 0.20 s a second for the other's holds, and the
tries were 9 to 12 % of the busy samples.

So the writers that hold the file for many writes a second, the lanes' groups, first take
this lock: an exclusive lock on the second byte of the file beside eve's
(``sqlite_requests.SUFFIX``) through an open file description of their own
(``F_OFD_SETLKW``: Linux's, let go by the kernel with the description, so when its process
dies, however it dies). A lane that finds it taken sleeps in the call with its interpreter
lock let go, and the kernel gives it the lock as the other worker lets it go, as its
``COMMIT`` or ``ROLLBACK`` begins (``sqlite_gate.let_writer_go_as_it_ends``). Within a
process the gate (``sqlite_gate.py``) lets one thread at a time take it: each process's
lock is one description, which its threads share.

A message's claim on the event loop (``claim_now.py``) does not take it: it tries SQLite's
lock once, as before. With claims trying this lock first (``F_OFD_SETLK``, ``NOT_NOW`` if
another process had it) a claim took 1.8 tries on the loop where it took 1.4 (two runs
against one, ``sqlite-2w-1000``): the lock passes to a waiting lane the moment it is let
go, in the kernel, and that lane holds it for the millisecond it may wait for its own
interpreter lock before its ``BEGIN IMMEDIATE``, while the file is free for a claim. A
claim that takes the file first holds the lane's ``BEGIN IMMEDIATE`` up for its own
transaction, as the claims first across workers mean it to (``sqlite_requests.py``).

It only orders: SQLite's lock still decides who writes. A writer that does not take this
lock (another thread's transaction, an ``eve sessions`` command, DBOS's own file, an older
eve) still takes SQLite's lock as before, so a lane that holds this one may still find the
file taken, and then tries ``BEGIN IMMEDIATE`` in pauses as it did. Where open file
description locks are missing (not Linux) there is no such lock and every writer does so.

A wait here has no timeout: the kernel offers none. The holder holds this lock only around
its transaction (its ``BEGIN IMMEDIATE`` waits ``busy_timeout`` at most), so a wait ends
with the holder's transaction, as a wait for SQLite's lock would; a holder that is stopped
(``SIGSTOP``) mid-transaction holds SQLite's lock as long, and a killed one lets both go.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import threading
from collections.abc import Callable
from contextlib import suppress

from eve.sessions.ofd_locks import Flock, c_fcntl, call_fcntl

#: the byte of the file beside eve's that the lock is on (the first is the requests' marks)
_BYTE = 1
#: the C library's ``fcntl`` with the interpreter's lock let go around the call, for the
#: wait; the tries and the letting go keep it (``ofd_locks.HOLDING_FCNTL``)
_WAITING_FCNTL: Callable[..., int] | None = c_fcntl(ctypes.CDLL)


class WriterLock:
    """This process's turn at eve's file among the processes that take it.

    ``take`` and ``try_take`` return whether this process now holds it; ``let_go`` lets
    it go. One thread at a time of a process uses it (the one that holds the gate)."""

    def __init__(self, beside: int) -> None:
        """``beside``: a descriptor of the file beside eve's; the lock has a description of
        its own (another's lock would be this process's own: ``F_OFD_SETLK`` never refuses
        its own description)."""
        self._fd = os.open(f"/proc/self/fd/{beside}", os.O_RDWR | os.O_CLOEXEC)
        self._lock = threading.Lock()
        # calls under way: a close waits for none, it leaves the descriptor to the last
        self._calls = 0
        self.closed = False
        #: the thread that holds it (None: no thread of this process)
        self.holder: int | None = None
        #: takes that found another process holding it, calls that failed otherwise (for
        #: tests and the benchmark)
        self.waited = 0
        self.failed = 0

    @property
    def usable(self) -> bool:
        """Open, and no call of it failed (a failed call would fail again)."""
        return not self.closed and not self.failed

    def try_take(self) -> bool:
        """Take it if no other process holds it; never waits."""
        return self._taken(self._set(fcntl.F_WRLCK, wait=False))

    def take(self) -> bool:
        """Take it, waiting in the kernel (the interpreter's lock let go) while another
        process holds it; False if it could not be had (closed, or the call failed: go on
        without it, it only orders)."""
        if self.try_take():
            return True
        self.waited += 1
        return self._taken(self._set(fcntl.F_WRLCK, wait=True))

    def let_go(self) -> None:
        """Let it go, if a thread of this process holds it."""
        if self.holder is not None:
            self.holder = None
            self._set(fcntl.F_UNLCK, wait=False)

    def _taken(self, taken: bool) -> bool:
        if taken:
            self.holder = threading.get_ident()
        return taken

    def _set(self, kind: int, *, wait: bool) -> bool:
        with self._lock:
            if not self.usable:
                return False
            self._calls += 1
        try:
            lock = Flock(l_type=kind, l_whence=os.SEEK_SET, l_start=_BYTE, l_len=1)
            while True:
                try:
                    if wait:
                        call_fcntl(self._fd, fcntl.F_OFD_SETLKW, lock, call=_WAITING_FCNTL)
                    else:
                        call_fcntl(self._fd, fcntl.F_OFD_SETLK, lock)
                    return True
                except InterruptedError:
                    continue  # (a signal's handler ran in this thread meanwhile)
                except OSError as error:
                    if error.errno not in (errno.EAGAIN, errno.EACCES):
                        # not taken by another: the call failed, and would again; it only
                        # orders, so every writer goes on as without it from now
                        self.failed += 1
                    return False
        finally:
            with self._lock:
                self._calls -= 1
                if self.closed and self._calls == 0:
                    self._close_fd()

    def close(self) -> None:
        """Let it go and close its description (now, or once a call under way returns:
        a descriptor closed under a waiting call could be reused by another file)."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self._calls == 0:
                self._close_fd()

    def drop_in_child(self) -> None:
        """In a forked child: close this process's copy of the parent's description, leaving
        the lock to the parent (``sqlite_requests.RequestSignal._drop_in_child``)."""
        self._lock = threading.Lock()
        self.closed = True
        self._close_fd()

    def _close_fd(self) -> None:
        with suppress(OSError):
            os.close(self._fd)
        self._fd = -1


def writer_lock(beside: int) -> WriterLock | None:
    """The lock on the file ``beside`` (a descriptor), or None where there can be none."""
    if _WAITING_FCNTL is None:
        return None
    try:
        return WriterLock(beside)
    except OSError:
        return None
