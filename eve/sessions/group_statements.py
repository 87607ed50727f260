"""A group's statements on the driver's cursor, without SQLAlchemy's execution around each.

The writer lane holds eve's SQLite file from a group's ``BEGIN IMMEDIATE`` to its commit
(``group_commit.py``), and with two workers the other cannot write meanwhile, so whatever
the lane computes between two statements lengthens the hold. A prepared statement
(``prepared_sql.py``) run through ``exec_driver_sql`` still went through SQLAlchemy's
execution context (the context object, its cursor, the result's metadata, the events):
about 20 µs of the lane's Python a statement, some twenty statements a group. Here a
statement of a group runs on one cursor of the group's driver connection, its rows fetched
at once into plain tuples with the columns' names (``Rows``), as the result it stands for
gave them.

What SQLAlchemy's execution did that still matters is kept: the listeners of
``before_cursor_execute`` and ``after_cursor_execute`` on the connection (the tests' faults,
the benchmark's counts) are called as it calls them, without an execution context, and an
error of the driver's is raised as SQLAlchemy raises it (``sa.exc.DBAPIError.instance``:
``IntegrityError``, ``OperationalError``...). A failing statement undoes the whole group
anyway, and each write runs again alone, through SQLAlchemy.
"""

from __future__ import annotations

import sqlite3
from collections import namedtuple
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

#: the maker of a row class by its columns' names (a statement's columns never change)
_ROW_CLASSES: dict[tuple[str, ...], Callable[[Any], Any]] = {}


class Rows:
    """What a statement returned: its rows (each a tuple whose items are also its columns'
    names) and the rows it changed, as SQLAlchemy's result gives them."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def first(self) -> Any | None:
        return self._rows[0] if self._rows else None

    def scalar(self) -> Any:
        return self._rows[0][0] if self._rows else None

    def all(self) -> list[Any]:
        return self._rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)


def run_raw(
    connection: Connection, cursor: sqlite3.Cursor, sql: str, params: Sequence[Any]
) -> Rows:
    """``sql`` with ``params`` on ``cursor`` (of ``connection``'s driver connection)."""
    dispatch = connection.dispatch
    try:
        for before in dispatch.before_cursor_execute:
            sql, params = before(connection, cursor, sql, params, None, False)
        cursor.execute(sql, params)
        description = cursor.description
        rows = [] if description is None else _named(description, cursor.fetchall())
        for after in dispatch.after_cursor_execute:
            after(connection, cursor, sql, params, None, False)
    except sqlite3.Error as error:
        raise sa.exc.DBAPIError.instance(
            sql, params, error, sqlite3.Error, dialect=connection.dialect
        ) from error
    return Rows(rows, cursor.rowcount)


def _named(description: Sequence[Sequence[Any]], fetched: list[Any]) -> list[Any]:
    names = tuple(column[0] for column in description)
    make = _ROW_CLASSES.get(names)
    if make is None:
        # (``rename``: a column named as no Python name can be, an expression's, is kept by
        # its place)
        row_class: Any = namedtuple("Row", names, rename=True)  # type: ignore[misc]
        make = _ROW_CLASSES[names] = row_class._make
    return [make(row) for row in fetched]
