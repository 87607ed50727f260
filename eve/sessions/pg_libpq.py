"""One query on a psycopg connection, sent and read without letting the interpreter's lock go.

psycopg's own calls let the lock go around libpq's sends and ``PQisBusy`` (its compiled
implementation's ``with nogil``), and on a worker whose hundred threads want the lock, the
thread that lets it go waits to have it back behind them (tens of milliseconds under load).
Here the same libpq psycopg loaded (found in ``/proc/self/maps``: its structures are that
build's) is called through ``ctypes.PyDLL``, which keeps the lock, on the connection's own
``PGconn`` pointer; the wait for the answer is ``poll(2)``, also called with the lock held,
so while it waits nothing else of the process runs: the wait is bounded by its caller.

Linux only (``/proc``); elsewhere ``found_libpq`` is None and the caller does without.
"""

from __future__ import annotations

import ctypes
import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: ``PQresultStatus``: a query that returned rows
PGRES_TUPLES_OK = 2
#: ``PQresultErrorField``'s code of the SQLSTATE
PG_DIAG_SQLSTATE = ord("C")
#: ``PQstatus``: the connection is usable
CONNECTION_OK = 0
POLLIN = 0x001


class QueryLost(Exception):
    """The connection failed after the query was sent: whether it ran is not known."""


class QueryRefused(Exception):
    """The server answered the query with an error (``sqlstate``): nothing of it committed."""

    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"the query failed with SQLSTATE {sqlstate}")
        self.sqlstate = sqlstate


class _PollFd(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int), ("events", ctypes.c_short), ("revents", ctypes.c_short)]


@dataclass(frozen=True)
class Libpq:
    """libpq's calls a query needs, each keeping the interpreter's lock."""

    lib: Any
    libc: Any

    def send(self, conn: int, command: bytes, params: list[bytes | None]) -> bool:
        """Send ``command`` with text ``params`` and flush it; False if libpq refused (the
        connection is not usable: nothing was sent)."""
        values = (ctypes.c_char_p * len(params))(*params)
        if not self.lib.PQsendQueryParams(conn, command, len(params), None, values, None, None, 0):
            return False
        return bool(self.lib.PQflush(conn) == 0)  # a small query: it leaves at once or not at all

    def usable(self, conn: int) -> bool:
        """Whether ``conn`` is open and its socket has nothing to read (an idle connection
        has nothing unless the server ended it: a restart, a killed backend)."""
        if self.lib.PQstatus(conn) != CONNECTION_OK:
            return False
        return not self.readable(self.lib.PQsocket(conn), 0)

    def readable(self, fd: int, timeout_ms: int) -> bool:
        polled = _PollFd(fd, POLLIN, 0)
        return bool(self.libc.poll(ctypes.byref(polled), 1, timeout_ms) > 0)

    def answered(self, conn: int) -> bool:
        """Read what arrived; whether the whole answer is in. ``QueryLost`` if the
        connection failed."""
        if self.lib.PQconsumeInput(conn) != 1:
            raise QueryLost("the connection failed while its query was out")
        return not self.lib.PQisBusy(conn)

    def wait(self, conn: int, seconds: float) -> bool:
        """Wait up to ``seconds`` (lock held) for the whole answer; whether it is in."""
        fd = self.lib.PQsocket(conn)
        deadline = time.perf_counter() + seconds
        while not self.answered(conn):
            left = deadline - time.perf_counter()
            if left <= 0:
                return False
            self.readable(fd, max(1, round(left * 1000)))
        return True

    def rows(self, conn: int) -> list[list[str | None]]:
        """The answer's rows (text), once ``answered``; ``QueryRefused`` for an error."""
        lib = self.lib
        found: list[list[str | None]] = []
        sqlstate: str | None = None
        while result := lib.PQgetResult(conn):
            try:
                if lib.PQresultStatus(result) == PGRES_TUPLES_OK:
                    found += _values(lib, result)
                else:
                    raw = lib.PQresultErrorField(result, PG_DIAG_SQLSTATE)
                    sqlstate = raw.decode() if raw else "?????"
            finally:
                lib.PQclear(result)
        if sqlstate is not None:
            raise QueryRefused(sqlstate)
        return found


def pointer(connection: Any) -> int:
    """The ``PGconn *`` of a psycopg connection (psycopg's ``pgconn.pgconn_ptr``)."""
    address: int = connection.pgconn.pgconn_ptr
    return address


def _values(lib: Any, result: int) -> list[list[str | None]]:
    def value(row: int, column: int) -> str | None:
        if lib.PQgetisnull(result, row, column):
            return None
        raw: bytes = lib.PQgetvalue(result, row, column)
        return raw.decode()

    columns = lib.PQnfields(result)
    return [[value(r, c) for c in range(columns)] for r in range(lib.PQntuples(result))]


@functools.cache
def found_libpq() -> Libpq | None:
    """The libpq psycopg loaded, its calls typed; None where it cannot be found (not
    Linux, or no libpq mapped into the process)."""
    import psycopg.pq  # noqa: F401  (loads libpq)

    path = _mapped_libpq()
    if path is None:
        return None
    try:
        lib, libc = ctypes.PyDLL(path), ctypes.PyDLL(None, use_errno=True)
    except OSError:
        return None
    _typed(lib, libc)
    return Libpq(lib, libc)


def _mapped_libpq() -> str | None:
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        path = line.split()[-1]
        if Path(path).name.startswith("libpq") and ".so" in path:
            return path
    return None


def _typed(lib: Any, libc: Any) -> None:
    ptr, c_int, c_char_p = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    signatures: dict[str, tuple[list[Any], Any]] = {
        "PQsendQueryParams": ([ptr, c_char_p, c_int, ptr, ptr, ptr, ptr, c_int], c_int),
        "PQflush": ([ptr], c_int),
        "PQconsumeInput": ([ptr], c_int),
        "PQisBusy": ([ptr], c_int),
        "PQgetResult": ([ptr], ptr),
        "PQresultStatus": ([ptr], c_int),
        "PQresultErrorField": ([ptr, c_int], c_char_p),
        "PQntuples": ([ptr], c_int),
        "PQnfields": ([ptr], c_int),
        "PQgetisnull": ([ptr, c_int, c_int], c_int),
        "PQgetvalue": ([ptr, c_int, c_int], c_char_p),
        "PQclear": ([ptr], None),
        "PQstatus": ([ptr], c_int),
        "PQsocket": ([ptr], c_int),
    }
    for name, (argtypes, restype) in signatures.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = argtypes, restype
    libc.poll.argtypes, libc.poll.restype = [ptr, ctypes.c_ulong, c_int], c_int
