"""SQLite's calls on a connection of the ``sqlite3`` module without letting the interpreter's
lock go: a write transaction's ``BEGIN IMMEDIATE`` and its statements on the writer lane.

The driver lets go of the lock around every ``sqlite3_prepare``, ``sqlite3_step`` and
``sqlite3_reset``, and on a loaded worker (the event loop and a hundred threads wanting it)
the lane's thread then waits to get it back, up to the switch interval each time, while it
holds the file: at 1,000 live sessions a write's 3.4 statements took 1.1 ms, a step of a few
rows in the WAL tens of microseconds of it. Here the same ``libsqlite3`` the module uses
(found in ``/proc/self/maps``: one copy of SQLite in the process, its structures the same
build's) is called through ``ctypes.PyDLL``, which keeps the lock, on the module
connection's own ``sqlite3 *`` (``pg_libpq.py`` does the same for psycopg's libpq).

Such a call must never block: a caller uses it only on a connection whose busy handler is
off (``group_commit._Kept``), so a locked file answers ``SQLITE_BUSY`` at once (raised as
the driver raises it, for ``take_write_lock`` to pause with the lock let go), and with the
automatic checkpoint off (``wal_checkpoints.py``), in a transaction that holds the file's
write lock, a statement only appends to the WAL. Errors are the driver's exceptions, with
its classes, codes and messages (``database or disk is full``, ``database disk image is
malformed``, ``database is locked``), so whatever maps them (``database_errors.py``) maps
these alike.

Linux only (``/proc``), on a ``sqlite3`` module linked to a shared ``libsqlite3``; elsewhere
``found_sqlite`` is None and the caller keeps the driver's calls.
"""

from __future__ import annotations

import ctypes
import functools
import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from eve.sessions.mapped_library import mapped_library
from eve.sessions.sqlite_held_rows import HeldRows, column_names, read_row

SQLITE_OK = 0
SQLITE_ROW = 100
SQLITE_DONE = 101
#: ``sqlite3_bind_text``'s destructor: SQLite copies the value before the call returns
SQLITE_TRANSIENT = ctypes.c_void_p(-1)
#: the parameters a statement here may take, exactly these types (others: the driver's path,
#: which adapts them)
BINDABLE = (int, float, str, bytes, type(None), bool)

#: the first Python whose ``pysqlite_Connection`` was not checked to start with its
#: ``sqlite3 *`` (3.11 to 3.13 do)
_UNCHECKED = (3, 14)
#: the driver's exception class of each primary result code (``_pysqlite_seterror``)
_CLASSES: dict[int, type[sqlite3.Error]] = {
    2: sqlite3.InternalError,  # SQLITE_INTERNAL
    12: sqlite3.InternalError,  # SQLITE_NOTFOUND
    11: sqlite3.DatabaseError,  # SQLITE_CORRUPT
    18: sqlite3.DataError,  # SQLITE_TOOBIG
    19: sqlite3.IntegrityError,  # SQLITE_CONSTRAINT
    20: sqlite3.IntegrityError,  # SQLITE_MISMATCH
    21: sqlite3.InterfaceError,  # SQLITE_MISUSE
    25: sqlite3.InterfaceError,  # SQLITE_RANGE
    26: sqlite3.DatabaseError,  # SQLITE_NOTADB
}
_OPERATIONAL = {1, 3, 4, 5, 6, 8, 9, 10, 13, 14, 15, 16, 17, 23}


class Unbindable(Exception):
    """A parameter of a type this module does not bind: the caller runs the statement on the
    driver's path instead (nothing ran)."""


@dataclass(frozen=True)
class HeldSqlite:
    """``libsqlite3``'s calls a write needs, each keeping the interpreter's lock."""

    lib: Any

    def handle(self, connection: sqlite3.Connection) -> int | None:
        """The ``sqlite3 *`` of ``connection``: the first field after the object's header in
        CPython's ``pysqlite_Connection``, read there and checked against the file the
        connection has open; None if they differ (another layout: the caller does without)."""
        if sys.implementation.name != "cpython" or sys.version_info >= _UNCHECKED:
            return None  # a layout not read here
        address = ctypes.c_void_p.from_address(id(connection) + object.__basicsize__).value
        if not address:
            return None
        names = connection.execute("PRAGMA database_list").fetchall()
        expected = next((row[2] for row in names if row[1] == "main"), None)
        found = self.lib.sqlite3_db_filename(address, b"main")
        if expected is None or found is None or found.decode() != expected:
            return None
        return int(address)

    def error(self, db: int) -> sqlite3.Error:
        """The driver's exception for the last failure on ``db``."""
        code = self.lib.sqlite3_extended_errcode(db)
        message = (self.lib.sqlite3_errmsg(db) or b"unknown error").decode(errors="replace")
        kind = (
            sqlite3.OperationalError if code & 0xFF in _OPERATIONAL else _CLASSES.get(code & 0xFF)
        )
        failure = (kind or sqlite3.DatabaseError)(message)
        failure.sqlite_errorcode = code
        failure.sqlite_errorname = error_name(code)
        return failure


@dataclass
class HeldConnection:
    """One connection's statements run with the interpreter's lock held, each prepared once
    and kept (finalized by ``close``). Used by one thread at a time."""

    sqlite: HeldSqlite
    db: int
    #: its ``COMMIT`` runs held too: it writes the WAL's frames and syncs nothing (WAL with
    #: ``synchronous=NORMAL``); a commit that syncs (``FULL``) lets the lock go, as before
    commits_held: bool = False
    #: its statements run held too, not only its ``BEGIN`` and ``COMMIT``
    statements: bool = True
    _prepared: dict[str, int] = field(default_factory=dict)

    @property
    def in_transaction(self) -> bool:
        return not self.sqlite.lib.sqlite3_get_autocommit(self.db)

    def begin_immediate(self) -> None:
        """``BEGIN IMMEDIATE``; the driver's ``OperationalError`` (``SQLITE_BUSY``) at once
        if another connection holds the file's write lock."""
        self.run("BEGIN IMMEDIATE", ())

    def commit(self) -> None:
        """``COMMIT``, raising the driver's exception as its ``commit`` would."""
        self.run("COMMIT", ())

    def run(self, sql: str, parameters: Sequence[Any]) -> int:
        """Run ``sql`` (a statement that returns no rows) with ``parameters``; the rows it
        changed. ``Unbindable`` before it runs if a parameter is of another type."""
        self._step(sql, parameters, None)
        return int(self.sqlite.lib.sqlite3_changes(self.db))

    def query(self, sql: str, parameters: Sequence[Any]) -> HeldRows:
        """Run ``sql`` (a read, or a write with ``RETURNING``) with ``parameters``; all its
        rows, as the driver's cursor gives them, and the rows it changed."""
        found: list[tuple[Any, ...]] = []
        names = self._step(sql, parameters, found)
        return HeldRows(names, found, int(self.sqlite.lib.sqlite3_changes(self.db)))

    def _step(
        self, sql: str, parameters: Sequence[Any], into: list[tuple[Any, ...]] | None
    ) -> tuple[str, ...]:
        lib, db = self.sqlite.lib, self.db
        statement = self._prepared.get(sql)
        if statement is None:
            statement = self._prepare(sql)
        try:
            for position, value in enumerate(parameters, start=1):
                _bind(lib, statement, position, value)
            result = lib.sqlite3_step(statement)
            names = column_names(lib, statement) if into is not None else ()
            while result == SQLITE_ROW:
                if into is not None:
                    into.append(read_row(lib, statement, names))
                result = lib.sqlite3_step(statement)
            if result != SQLITE_DONE:
                raise self.sqlite.error(db)
        finally:
            lib.sqlite3_reset(statement)
            lib.sqlite3_clear_bindings(statement)
        return names

    def close(self) -> None:
        """Finalize the kept statements (before the connection closes)."""
        prepared, self._prepared = self._prepared, {}
        for statement in prepared.values():
            self.sqlite.lib.sqlite3_finalize(statement)

    def _prepare(self, sql: str) -> int:
        statement = ctypes.c_void_p()
        encoded = sql.encode()
        lib = self.sqlite.lib
        if lib.sqlite3_prepare_v2(self.db, encoded, len(encoded), ctypes.byref(statement), None):
            raise self.sqlite.error(self.db)
        assert statement.value is not None, "a statement, not only a comment"
        self._prepared[sql] = statement.value
        return statement.value


def _bind(lib: Any, statement: int, position: int, value: Any) -> None:
    kind = type(value)
    if kind is str:
        encoded = value.encode()
        result = lib.sqlite3_bind_text(statement, position, encoded, len(encoded), SQLITE_TRANSIENT)
    elif kind is int or kind is bool:
        result = lib.sqlite3_bind_int64(statement, position, value)
    elif value is None:
        result = lib.sqlite3_bind_null(statement, position)
    elif kind is float:
        result = lib.sqlite3_bind_double(statement, position, value)
    elif kind is bytes:
        result = lib.sqlite3_bind_blob(statement, position, value, len(value), SQLITE_TRANSIENT)
    else:
        raise Unbindable(f"a parameter of type {kind.__name__}")
    if result != SQLITE_OK:
        raise sqlite3.InterfaceError(f"could not bind parameter {position} ({result})")


def bindable(parameters: Any) -> bool:
    """Whether every one of ``parameters`` (a positional sequence) binds here as the driver
    would bind it (an integer past 64 bits: the driver's ``OverflowError``)."""
    return isinstance(parameters, tuple | list) and all(map(_bindable, parameters))


def _bindable(value: Any) -> bool:
    kind = type(value)
    if kind is int:
        return bool(_SMALLEST <= value <= _LARGEST)
    return kind in BINDABLE


_SMALLEST, _LARGEST = -(2**63), 2**63 - 1


@functools.cache
def error_name(code: int) -> str:
    """The driver's name of a result code (``SQLITE_CONSTRAINT_UNIQUE``), from its
    constants, or the primary code's name."""
    for candidate in (code, code & 0xFF):
        for name, value in vars(sqlite3).items():
            if name.startswith("SQLITE_") and value == candidate and _is_result(name):
                return name
    return "SQLITE_UNKNOWN"


_RESULTS = (
    "OK", "ERROR", "INTERNAL", "PERM", "ABORT", "BUSY", "LOCKED", "NOMEM", "READONLY",
    "INTERRUPT", "IOERR", "CORRUPT", "NOTFOUND", "FULL", "CANTOPEN", "PROTOCOL", "EMPTY",
    "SCHEMA", "TOOBIG", "CONSTRAINT", "MISMATCH", "MISUSE", "NOLFS", "AUTH", "FORMAT", "RANGE",
    "NOTADB", "NOTICE", "WARNING", "ROW", "DONE",
)  # fmt: skip


def _is_result(name: str) -> bool:
    # (the module's constants also name the authorizer's actions, numbered from 1 too)
    rest = name.removeprefix("SQLITE_")
    return any(rest == primary or rest.startswith(primary + "_") for primary in _RESULTS)


@functools.cache
def found_sqlite() -> HeldSqlite | None:
    """The ``libsqlite3`` the ``sqlite3`` module uses, its calls typed; None where it cannot
    be found (not Linux, or SQLite built into the module)."""
    path = mapped_library("libsqlite3")
    if path is None:
        return None
    try:
        lib = ctypes.PyDLL(path)
    except OSError:
        return None
    _typed(lib)
    if lib.sqlite3_libversion().decode() != sqlite3.sqlite_version:
        return None  # another copy than the module's (SQLite built into it)
    return HeldSqlite(lib)


def _typed(lib: Any) -> None:
    ptr, c_int, c_char_p = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    signatures: dict[str, tuple[list[Any], Any]] = {
        "sqlite3_libversion": ([], c_char_p),
        "sqlite3_busy_timeout": ([ptr, c_int], c_int),
        "sqlite3_db_filename": ([ptr, c_char_p], c_char_p),
        "sqlite3_extended_errcode": ([ptr], c_int),
        "sqlite3_errmsg": ([ptr], c_char_p),
        "sqlite3_get_autocommit": ([ptr], c_int),
        "sqlite3_prepare_v2": ([ptr, c_char_p, c_int, ptr, ptr], c_int),
        "sqlite3_step": ([ptr], c_int),
        "sqlite3_reset": ([ptr], c_int),
        "sqlite3_clear_bindings": ([ptr], c_int),
        "sqlite3_finalize": ([ptr], c_int),
        "sqlite3_changes": ([ptr], c_int),
        "sqlite3_bind_text": ([ptr, c_int, c_char_p, c_int, ptr], c_int),
        "sqlite3_bind_blob": ([ptr, c_int, c_char_p, c_int, ptr], c_int),
        "sqlite3_bind_int64": ([ptr, c_int, ctypes.c_int64], c_int),
        "sqlite3_bind_double": ([ptr, c_int, ctypes.c_double], c_int),
        "sqlite3_bind_null": ([ptr, c_int], c_int),
        "sqlite3_column_count": ([ptr], c_int),
        "sqlite3_column_name": ([ptr, c_int], c_char_p),
        "sqlite3_column_type": ([ptr, c_int], c_int),
        "sqlite3_column_int64": ([ptr, c_int], ctypes.c_int64),
        "sqlite3_column_double": ([ptr, c_int], ctypes.c_double),
        "sqlite3_column_blob": ([ptr, c_int], ptr),
        "sqlite3_column_text": ([ptr, c_int], ptr),
        "sqlite3_column_bytes": ([ptr, c_int], c_int),
    }
    for name, (argtypes, restype) in signatures.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = argtypes, restype
