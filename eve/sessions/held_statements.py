"""The write statements of a group commit's transaction run with the interpreter's lock held
(``sqlite_held.py``), through SQLAlchemy as before.

A connection marked here (``hold``: the connection the writer lane's groups run on,
``group_commit._Kept``) has its write statements (``INSERT``, ``UPDATE``, ``DELETE`` with no
``RETURNING``), inside a transaction, run by ``HeldConnection.run`` in place of the driver's
cursor, from the engine's dialect (``held_writes``); SQLAlchemy's events, its errors
(``IntegrityError`` and the rest, from the driver's exceptions) and the result's
``rowcount`` are as they were. Anything else (a read, a statement whose parameters the
driver would adapt, an insert whose new row's id SQLAlchemy reads back, any statement of
an unmarked connection) takes the driver's path.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import Any

from sqlalchemy.engine import Connection, Engine

from eve.sessions.sqlite_held import HeldConnection, bindable, found_sqlite

#: the key of a connection's ``info`` while its writes run held
_HELD = "eve_held_writes"
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def hold(connection: Connection) -> HeldConnection | None:
    """Mark ``connection`` (of an engine ``held_writes`` set up): its write statements run
    with the lock held from now on; the held connection (``release`` it before closing),
    or None where SQLite's library cannot be called so (they go on as before)."""
    sqlite = found_sqlite()
    raw = connection.connection.dbapi_connection
    if sqlite is None or not isinstance(raw, sqlite3.Connection):
        return None
    handle = sqlite.handle(raw)
    if handle is None:
        return None
    held = connection.info[_HELD] = HeldConnection(sqlite, handle)
    return held


def release(connection: Connection) -> None:
    """Unmark ``connection`` and finalize its statements (before it is closed)."""
    held: HeldConnection | None = connection.info.pop(_HELD, None)
    if held is not None:
        held.close()


def held_of(connection: Connection) -> HeldConnection | None:
    """The held connection of a marked ``connection``."""
    held: HeldConnection | None = connection.info.get(_HELD)
    return held


def held_writes(engine: Engine) -> None:
    """Run the write statements of ``engine``'s marked connections held (on the engine's
    own dialect: ``create_engine`` makes one per engine)."""
    dialect = engine.dialect
    execute = dialect.do_execute

    def do_execute(cursor: Any, statement: str, parameters: Any, context: Any = None) -> None:
        held = None if context is None else context.root_connection.info.get(_HELD)
        if held is None or not _held_here(held, statement, parameters, context):
            execute(cursor, statement, parameters, context)
            return
        context._rowcount = held.run(statement, parameters)

    # (an instance's attribute, as mypy allows no assignment to a method)
    setattr(dialect, "do_execute", do_execute)  # noqa: B010


def _held_here(held: HeldConnection, statement: str, parameters: Any, context: Any) -> bool:
    if not _writes(statement) or not held.in_transaction or not bindable(parameters):
        return False
    # SQLAlchemy reads the new row's id from the driver's cursor (an autoincrement key)
    compiled = context.compiled
    return not (context.isinsert and compiled is not None and compiled.postfetch_lastrowid)


@functools.lru_cache(maxsize=512)
def _writes(statement: str) -> bool:
    """Whether ``statement`` writes and returns no rows."""
    words = statement.lstrip().upper()
    return words.startswith(_WRITES) and "RETURNING" not in words
