"""The rows of a statement run with the interpreter's lock held (``sqlite_held.py``), read as
the ``sqlite3`` module reads them and handed to SQLAlchemy as its cursor would hand them.

The module's defaults are what eve's engines use (no ``detect_types``, ``text_factory`` is
``str``): an integer is an ``int``, a real a ``float``, text a ``str`` (UTF-8; text that is
not fails as the driver fails it), a blob ``bytes``, NULL ``None``.
"""

from __future__ import annotations

import ctypes
import sqlite3
from typing import Any

SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB = 1, 2, 3, 4


class HeldRows:
    """What SQLAlchemy reads of a driver's cursor once its statement ran: ``description``,
    the fetches, ``close``; all the rows are read already."""

    def __init__(self, names: tuple[str, ...], rows: list[tuple[Any, ...]], changes: int) -> None:
        #: as the driver's: a 7-tuple a column, only its name known
        self.description = tuple((name, None, None, None, None, None, None) for name in names)
        #: the rows the statement changed (a write with ``RETURNING``)
        self.changes = changes
        self.rowcount = -1
        self.lastrowid: int | None = None
        self._rows = rows
        self._at = 0

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        taken = self._rows[self._at : self._at + (1 if size is None else size)]
        self._at += len(taken)
        return taken

    def fetchall(self) -> list[tuple[Any, ...]]:
        taken = self._rows[self._at :]
        self._at = len(self._rows)
        return taken

    def close(self) -> None:
        self._rows, self._at = [], 0


def column_names(lib: Any, statement: int) -> tuple[str, ...]:
    count = lib.sqlite3_column_count(statement)
    return tuple(lib.sqlite3_column_name(statement, i).decode() for i in range(count))


def read_row(lib: Any, statement: int, names: tuple[str, ...]) -> tuple[Any, ...]:
    """The current row of ``statement``, a value a column of ``names``."""
    return tuple(_value(lib, statement, i, name) for i, name in enumerate(names))


def _value(lib: Any, statement: int, column: int, name: str) -> Any:
    kind = lib.sqlite3_column_type(statement, column)
    if kind == SQLITE_INTEGER:
        return lib.sqlite3_column_int64(statement, column)
    if kind == SQLITE_FLOAT:
        return lib.sqlite3_column_double(statement, column)
    if kind == SQLITE_TEXT:
        raw = _bytes(lib, statement, column, lib.sqlite3_column_text(statement, column))
        try:
            return raw.decode()
        except UnicodeDecodeError as error:
            text = raw.decode(errors="replace")
            failed = f"Could not decode to UTF-8 column '{name}' with text '{text}'"
            raise sqlite3.OperationalError(failed) from error
    if kind == SQLITE_BLOB:
        return _bytes(lib, statement, column, lib.sqlite3_column_blob(statement, column))
    return None


def _bytes(lib: Any, statement: int, column: int, pointer: int | None) -> bytes:
    # (the length after the pointer, as SQLite's documentation orders them)
    size = lib.sqlite3_column_bytes(statement, column)
    return ctypes.string_at(pointer, size) if pointer else b""
