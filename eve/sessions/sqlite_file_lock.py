"""One write transaction at a time on a SQLite file across processes, handed over at once.

Two workers (``eve serve --workers 2``, or an ``eve dev`` beside an ``eve serve``) share
the session files, and SQLite lets one connection write at a time. A connection that finds
the file locked sleeps in SQLite's busy handler (1, 2, 5 ... up to 100 ms) and tries again,
so the lock goes to whoever tries while it is free, and the file stands idle between a
commit and the next try: two workers at 1,000 sessions used 1.06 cores of 2 with their
writers asleep there (``py-spy dump``, bench/README.md).

So a write transaction first takes an exclusive ``flock`` on a file beside the database
(``eve.sqlite`` → ``eve.sqlite-writer``), blocking in the kernel, which wakes the waiter
the moment the holder lets go; SQLite's own lock is then free, and its busy handler never
sleeps. The interpreter's lock is released while a thread waits, and the kernel releases
the lock of a process that dies, whatever it was doing. The lock only orders: SQLite's is
still the one that counts, so a writer that does not take this one (the ``sqlite3`` shell,
an older eve) is still safe, it only waits as before.

A ``flock`` belongs to an open file, shared by every thread of the process: so the lock is
taken by one thread at a time, the holder of the process's gate (``sqlite_gate.py``).

The first try (``LOCK_NB``) and the release call the C library's ``flock`` keeping the
interpreter's lock: ``fcntl.flock`` lets go of it around the system call, and a thread that
took the file lock there then waited for the interpreter's lock (up to its switch interval,
5 ms, while another thread ran) holding the file lock, with the other process's writers
waiting on it. Only a wait for another process lets the interpreter's lock go.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
from pathlib import Path

from sqlalchemy.engine import make_url

#: what the lock's file adds to the database's name (as SQLite names ``-wal`` and ``-shm``)
SUFFIX = "-writer"

#: ``flock(2)`` called with the interpreter's lock held (``PyDLL``; ``CDLL`` lets it go)
_flock = ctypes.PyDLL(None, use_errno=True).flock
_flock.argtypes = (ctypes.c_int, ctypes.c_int)
_flock.restype = ctypes.c_int


class FileLock:
    """An exclusive ``flock`` on the file beside the database at ``database``."""

    def __init__(self, database: Path) -> None:
        self.path = database.with_name(database.name + SUFFIX)
        self._fd: int | None = None
        self._pid = 0
        #: transactions of this process holding it (a nested one takes it again)
        self._depth = 0
        #: times another process held it when asked (for tests and the benchmark)
        self.waited = 0

    def acquire(self) -> bool:
        """Take the lock, waiting for another process to let go of it; False (not taken)
        when its file cannot be opened: the write goes on to SQLite's lock, which says
        what is wrong with the directory better than this would."""
        if self._depth and self._pid == os.getpid():
            self._depth += 1
            return True
        fd = self._file()
        if fd is None:
            return False
        if _flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB):
            if ctypes.get_errno() != errno.EWOULDBLOCK:
                return False  # a file that takes no locks: SQLite's lock alone, as before
            self.waited += 1
            # blocks in the kernel without the interpreter's lock, woken when it is free
            fcntl.flock(fd, fcntl.LOCK_EX)
        self._depth = 1
        return True

    def release(self) -> None:
        self._depth -= 1
        if not self._depth and self._fd is not None:
            _flock(self._fd, fcntl.LOCK_UN)

    def _file(self) -> int | None:
        # a process's own open file: one inherited over ``fork`` is the parent's too, and a
        # flock on it would be held by both (closing the inherited copy releases nothing)
        if self._fd is not None and self._pid == os.getpid():
            return self._fd
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return None
        self._pid = os.getpid()
        return self._fd

    def close(self) -> None:
        """Close its file (an engine disposed of), unless a transaction holds it."""
        if self._depth:
            return
        if self._fd is not None and self._pid == os.getpid():
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None


def database_path(url: str) -> Path | None:
    """The file of a ``sqlite:///`` URL; None for an in-memory database."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)
