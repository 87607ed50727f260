"""Statements a turn runs every time, compiled once on SQLite rather than looked up at every call.

``Connection.execute`` of a Core statement finds its compiled form in the engine's cache at
every call: it walks the statement to make the cache key, then builds the parameters by
name. For the writes every turn makes (its place's start and end, each step's record, its
checkpoint) that was about half of a statement's cost in SQLAlchemy: 18 to 21 µs a
statement against 9.4 to 10.6 through ``exec_driver_sql`` (``bench/prepared_sql.py``).
``run_prepared`` compiles such a statement once per set of parameter names with the
connection's own dialect, as ``execute`` would, passes each value through its type's bind
processor, and runs the SQL text with SQLite's positional parameters: what reaches SQLite
is what ``execute`` sent. SQLAlchemy's events fire as before (the write gate,
``sqlite_gate.py``, takes the file's lock in one).

The reads a turn makes (its body's progress, its step records, the session's head place
and the claim's new turn number, ``RETURNING``) run so too when no column they return has a
type that processes its values on the way out (SQLite's ``Boolean``, ``DateTime``, JSON):
the driver's values are then what ``execute`` gave, in rows whose names are the columns'
(a statement that returns such a column keeps ``execute``). Only on SQLite: PostgreSQL's
turn path is one call of its own (``pg_turn_end.py``, ``pg_appends.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy.engine import Connection, CursorResult, Dialect
from sqlalchemy.sql.base import Executable

from eve.sessions.group_commit import SharedTransaction, joined
from eve.sessions.group_statements import Rows

#: (the SQL, its parameters' names in order, bind processors, the statement's constants)
Prepared = tuple[str, tuple[str, ...], dict[str, Callable[[Any], Any]], dict[str, Any]]
#: by dialect, then by the statement's id and the parameters' names: the statement itself
#: (an id is unique only while its object lives) and what it compiled to (None: a statement
#: whose rows need a type's processing, left to ``execute``)
_PREPARED: WeakKeyDictionary[
    Dialect, dict[tuple[int, tuple[str, ...]], tuple[Any, Prepared | None]]
] = WeakKeyDictionary()


def compile_prepared(
    statement: Any,
    dialect: Dialect,
    names: list[str] | None,
    *,
    schema_translate_map: Mapping[str | None, str | None] | None = None,
) -> Prepared:
    """``statement`` compiled by ``dialect`` for parameters of ``names`` (an INSERT's
    columns; None: only its own bind parameters), with positional parameters' order."""
    translate = {"schema_translate_map": schema_translate_map, "render_schema_translate": True}
    compiled = statement.compile(
        dialect=dialect, column_keys=names, **(translate if schema_translate_map else {})
    )
    # a column's Python-side default is computed by ``execute``'s context, which the SQL
    # text alone skips: such a statement is not one to prepare
    assert not compiled.insert_prefetch and not compiled.update_prefetch, statement
    processors: dict[str, Callable[[Any], Any]] = {}
    #: the value each bind parameter holds in the statement, for those a call does not give
    constants: dict[str, Any] = {}
    for bind_name, bind in compiled.binds.items():
        processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if processor is not None:
            processors[bind_name] = processor
        constants[bind_name] = bind.value
    return str(compiled), tuple(compiled.positiontup or ()), processors, constants


def positional(prepared: Prepared, values: Mapping[str, Any]) -> tuple[Any, ...]:
    """``values`` (by name) as the prepared statement's positional parameters."""
    _, order, processors, constants = prepared
    params = []
    for bind in order:
        value = values[bind] if bind in values else constants[bind]
        processor = processors.get(bind)
        params.append(value if processor is None else processor(value))
    return tuple(params)


def plain_rows(statement: Any, dialect: Dialect) -> bool:
    """Whether every column ``statement`` returns comes out of the driver as its value is
    (no result processor of its type for ``dialect``); a write without ``RETURNING`` returns
    none."""
    columns = getattr(statement, "exported_columns", ())
    return all(
        column.type.dialect_impl(dialect).result_processor(dialect, None) is None
        for column in columns
    )


def run_prepared(
    c: Connection, statement: Executable, values: dict[str, Any]
) -> CursorResult[Any] | Rows:
    """``c.execute(statement, values)``; on SQLite, compiled once per set of names."""
    prepared = _prepared(c, statement, values)
    if prepared is None:
        return c.execute(statement, values)
    return run_sql(c, prepared[0], positional(prepared, values))


def insert_later(c: Connection, statement: Executable, values: dict[str, Any]) -> bool:
    """Keep the row ``statement`` (an INSERT of one) inserts with ``values``, which must be
    new, for one statement with the group's others (``group_inserts.py``) when ``c`` runs a
    group of the writer lane; False otherwise (the caller runs it)."""
    shared = in_group(c)
    prepared = None if shared is None else _prepared(c, statement, values)
    if shared is None or prepared is None:
        return False
    shared.insert_later(prepared[0], positional(prepared, values), rows=1, every_row=True)
    return True


def _prepared(c: Connection, statement: Executable, values: dict[str, Any]) -> Prepared | None:
    """``statement`` compiled for ``values``' names; None off SQLite, or for a statement
    whose rows need a type's processing."""
    if c.dialect.name != "sqlite":
        return None
    cache = _PREPARED.setdefault(c.dialect, {})
    names = tuple(values)
    found = cache.get((id(statement), names))
    if found is None or found[0] is not statement:
        # as ``execute`` compiles it: the parameters' names as the column keys
        compiled = (
            compile_prepared(statement, c.dialect, sorted(names))
            if plain_rows(statement, c.dialect)
            else None
        )
        found = cache[(id(statement), names)] = (statement, compiled)
    return found[1]


def in_group(c: Connection) -> SharedTransaction | None:
    """The writer lane's group ``c`` runs, if it runs one."""
    shared = joined(c.engine)
    return shared if shared is not None and shared.lanes and shared.connection is c else None


def run_sql(c: Connection, sql: str, params: tuple[Any, ...]) -> CursorResult[Any] | Rows:
    """``c.exec_driver_sql(sql, params)``; in a group of the writer lane, on the driver's
    cursor (``group_statements.py``)."""
    shared = in_group(c)
    if shared is not None:
        return shared.run(sql, params)
    return c.exec_driver_sql(sql, params)
