"""Whether a request waits on a worker's sockets, asked without letting the interpreter's
lock go: an epoll set of eve's own (Linux), polled with a zero timeout from the event loop's
thread between two slices of the turns' work (``serving_loop.py``).

A look at the sockets by a full turn of uvloop's loop lets the lock go (uvloop waits in
``epoll_wait`` without it) and then waits to have it back behind the worker's threads; a
look through this set is one system call that keeps the lock, so the loop goes on with the
turns' work at once when no request waits. The set holds the sockets a worker reads
requests on: the listening ones (``add_reader``) and the connections uvicorn's protocol
made (``serving.serving_protocol``). A socket leaves the set by itself when it is closed
(epoll forgets a file once nothing holds it open).

``ctypes.PyDLL`` calls C with the lock held (``CDLL`` lets it go). Where epoll is not there
(not Linux) ``epoll_watch`` is None and the loop looks at its sockets after every slice,
as it did before this set.
"""

from __future__ import annotations

import ctypes
import errno
import sys
from typing import Any

EPOLLIN = 0x001
EPOLL_CTL_ADD = 1
EPOLL_CTL_MOD = 3
EPOLL_CLOEXEC = 0o2000000


class _Event(ctypes.Structure):
    # packed (12 bytes) on x86-64, 16 elsewhere; 16 here, so the buffer fits either, and
    # only ``events`` (at offset 0 on both) is ever set
    _fields_ = [("events", ctypes.c_uint32), ("data", ctypes.c_uint64)]


class EpollWatch:
    """An epoll set of request sockets, asked with the interpreter's lock held."""

    def __init__(self, libc: Any, epfd: int) -> None:
        self._libc = libc
        self._epfd = epfd
        self._ready = _Event()
        self._ready_ref = ctypes.byref(self._ready)
        #: looks that found a socket readable, and those that found none (for tests and the
        #: benchmark)
        self.found = 0
        self.none = 0

    def watch(self, fd: int) -> None:
        """Watch ``fd`` for bytes to read (again, if a closed socket's number came back)."""
        event = _Event(EPOLLIN, fd)
        if self._libc.epoll_ctl(self._epfd, EPOLL_CTL_ADD, fd, ctypes.byref(event)) == 0:
            return
        if ctypes.get_errno() == errno.EEXIST:
            self._libc.epoll_ctl(self._epfd, EPOLL_CTL_MOD, fd, ctypes.byref(event))
        # another error (a socket closed before it was watched): nothing to read there

    def any_readable(self) -> bool:
        """Whether a watched socket has bytes (or a connection) waiting, at once."""
        if self._libc.epoll_wait(self._epfd, self._ready_ref, 1, 0) != 0:
            # an error (EINTR) counts as readable: the loop then looks itself
            self.found += 1
            return True
        self.none += 1
        return False

    def close(self) -> None:
        if self._epfd >= 0:
            self._libc.close(self._epfd)
            self._epfd = -1


def epoll_watch() -> EpollWatch | None:
    """An ``EpollWatch``, or None where epoll is not there (not Linux) or cannot be made."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.PyDLL(None, use_errno=True)
        epoll_create1, epoll_ctl, epoll_wait = libc.epoll_create1, libc.epoll_ctl, libc.epoll_wait
    except (OSError, AttributeError):
        return None
    epoll_create1.argtypes = [ctypes.c_int]
    epoll_ctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    epoll_wait.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    libc.close.argtypes = [ctypes.c_int]
    epfd = epoll_create1(EPOLL_CLOEXEC)
    if epfd < 0:
        return None
    return EpollWatch(libc, epfd)
