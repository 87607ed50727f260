"""A group's INSERTs of rows, one statement a table for all of its writes.

In a group of the writer lane (``group_commit.py``) most writes are a session's events
(``event_inserts.py``) and a step's record riding with them (``step_records.add_record``):
an INSERT each, each a call into SQLite around which the driver lets the interpreter's lock
go, and the lane, holding the file, waits to have it back. Here such an INSERT is kept
until the group's next other statement, or its commit, and the rows kept for one table go
in one statement: a group of six writes ran about seven INSERTs, now two or three.

Nothing reads them before they are in: they go in before the group's next statement that
names their table (a read of a later write sees them, as it would have; a subquery names
its table too), and before its commit. eve's tables have no view, trigger or foreign key
that would touch a table unnamed, so what changes is only the order of statements on
different tables, whose rows are independent. A kept row that SQLite refuses fails the
statement that carries it, which undoes the whole group, as its own would have; a row that
must be new (``every_row``: a step's record, kept only when none is there) and was not
inserted undoes the group too, and each write runs again alone, where it reads the record
that is there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from eve.sessions.group_statements import Rows

#: parameters in one statement at most: SQLite takes 32,766 (since 3.32)
MOST_PARAMETERS = 30_000


@dataclass(frozen=True, slots=True)
class _Shape:
    """An INSERT's text around its rows: ``head`` + ``one`` for each row, joined by commas,
    + ``tail``."""

    head: str
    one: str
    tail: str
    width: int
    #: the table it inserts into, as the statements that read or change it name it
    table: str


@dataclass(slots=True)
class _Waiting:
    shape: _Shape
    values: list[Any] = field(default_factory=list)
    rows: int = 0
    every_row: bool = False


_SHAPES: dict[str, _Shape] = {}


def _shape(sql: str) -> _Shape:
    """The shape of ``sql``, an ``INSERT … VALUES (?, …)[, (?, …)…][ tail]``."""
    found = _SHAPES.get(sql)
    if found is None:
        start = sql.index(" VALUES ") + len(" VALUES ")
        one = sql[start : sql.index(")", start) + 1]
        assert one.startswith("(") and set(one) <= set("(?, )"), sql
        table = sql[len("INSERT INTO ") :].split(maxsplit=1)[0]
        assert sql.startswith("INSERT INTO ") and table.startswith("eve_"), sql
        found = _SHAPES[sql] = _Shape(
            head=sql[:start],
            one=one,
            tail=sql[sql.rindex(")") + 1 :],
            width=one.count("?"),
            table=table,
        )
    return found


class GroupInserts:
    """The rows a group keeps to insert, by statement."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], _Waiting] = {}

    def __bool__(self) -> bool:
        return bool(self._kept)

    def add(self, sql: str, params: Sequence[Any], *, rows: int, every_row: bool) -> None:
        """Keep the rows of ``sql`` (``rows`` of them, ``params`` their values one row after
        another); ``every_row``: each must be inserted (an ``ON CONFLICT DO NOTHING`` that
        did nothing undoes the group)."""
        shape = _shape(sql)
        kept = self._kept.get((shape.head, shape.tail))
        if kept is None:
            kept = self._kept[(shape.head, shape.tail)] = _Waiting(shape)
        kept.values.extend(params)
        kept.rows += rows
        kept.every_row = kept.every_row or every_row

    def needed_by(self, sql: str) -> bool:
        """Whether ``sql`` names a table with rows kept (it must see them, or come after
        them); a statement of other tables may run before them."""
        return any(kept.shape.table in sql for kept in self._kept.values())

    def flush(self, run: Callable[[str, Sequence[Any]], Rows]) -> bool:
        """Insert what is kept, each statement through ``run``; False if a row that had to
        be new was not inserted. (``run`` is not kept: the group's transaction holds this,
        and a bound method of it kept here would make a cycle of the two.)"""
        kept, self._kept = self._kept, {}  # (before running: a statement run flushes first)
        whole = True
        for insert in kept.values():
            shape = insert.shape
            most = max(1, MOST_PARAMETERS // shape.width)
            for first in range(0, insert.rows, most):
                rows = min(most, insert.rows - first)
                sql = shape.head + ", ".join([shape.one] * rows) + shape.tail
                values = insert.values[first * shape.width : (first + rows) * shape.width]
                done = run(sql, values)
                whole = whole and (not insert.every_row or done.rowcount == rows)
        return whole
