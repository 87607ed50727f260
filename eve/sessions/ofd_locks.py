"""Open file description locks through the C library: a lock a process's descriptions hold
apart from each other, that the kernel lets go with its description (``fcntl(2)``,
``F_OFD_SETLK``; Linux's).

Python's ``fcntl.fcntl`` always lets the interpreter's lock go around the call, and a
thread that calls it with a file of eve's held then waits to have the interpreter's lock
back behind the event loop (``sqlite_requests.py``); a call that never blocks goes through
``PyDLL`` here instead, which keeps it, and only a wait lets it go (``CDLL``).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
from collections.abc import Callable


class Flock(ctypes.Structure):
    """``struct flock`` (fcntl.h) on Linux."""

    _fields_ = (
        ("l_type", ctypes.c_short),
        ("l_whence", ctypes.c_short),
        ("l_start", ctypes.c_int64),
        ("l_len", ctypes.c_int64),
        ("l_pid", ctypes.c_int),
    )


def c_fcntl(library: type[ctypes.CDLL] = ctypes.PyDLL) -> Callable[..., int] | None:
    """The C library's ``fcntl`` called with the interpreter's lock held (``PyDLL``) or let
    go around the call (``CDLL``), where open file description locks exist."""
    if not hasattr(fcntl, "F_OFD_GETLK"):
        return None
    call = library(None, use_errno=True).fcntl
    call.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.POINTER(Flock))
    call.restype = ctypes.c_int
    return call


#: the C library's ``fcntl`` with the interpreter's lock held (None: no such locks here)
HOLDING_FCNTL = c_fcntl()


def call_fcntl(
    fd: int, command: int, lock: Flock, *, call: Callable[..., int] | None = None
) -> None:
    """``fcntl(fd, command, &lock)`` through ``call`` (``HOLDING_FCNTL`` unless given); ``OSError``
    (of the errno's subclass) if it fails."""
    call = HOLDING_FCNTL if call is None else call
    assert call is not None
    if call(fd, command, ctypes.byref(lock)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
