"""The write statements of a group commit's transaction, and of a claim on the event loop,
run with the interpreter's lock held (``sqlite_held.py``), through SQLAlchemy as before.

A connection marked here (``hold``: the connection the writer lane's groups run on,
``group_commit._Kept``, and the loop's claims', ``claim_now.py``) has its write statements
(``INSERT``, ``UPDATE``, ``DELETE`` with no ``RETURNING``) inside a transaction run by
``HeldConnection.run`` in place of the driver's cursor, from the engine's dialect
(``held_writes``), and its ``COMMIT`` too where it syncs nothing; SQLAlchemy's events, its
errors (``IntegrityError`` and the rest, from the driver's exceptions) and the result's
``rowcount`` are as they were. Anything else (a read, a statement whose parameters the
driver would adapt, an insert whose new row's id SQLAlchemy reads back, any statement of an
unmarked connection) takes the driver's path.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import Any, Literal, assert_never

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from eve.sessions.sqlite_held import HeldConnection, bindable, found_sqlite

#: the key of a connection's ``info`` while its writes run held
_HELD = "eve_held_writes"
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
_READS = ("SELECT",)


def hold(connection: Connection, *, statements: bool = True) -> HeldConnection | None:
    """Mark ``connection`` (of an engine ``held_writes`` set up), its busy handler off: its
    ``BEGIN`` and ``COMMIT`` (``group_commit.SharedTransaction``), and with ``statements``
    its statements in a transaction, run with the lock held from now on. The held connection
    (``release`` it before closing), or None where SQLite's library cannot be called so
    (they go on as before)."""
    sqlite = found_sqlite()
    raw = connection.connection.dbapi_connection
    if sqlite is None or not isinstance(raw, sqlite3.Connection):
        return None
    handle = sqlite.handle(raw)
    if handle is None:
        return None
    journal = raw.execute("PRAGMA journal_mode").fetchone()
    synchronous = raw.execute("PRAGMA synchronous").fetchone()
    syncs = journal is None or journal[0] != "wal" or synchronous is None or synchronous[0] > 1
    # a held call must never sleep in SQLite's busy handler: a locked file answers at once
    # (the callers turned it off already; this makes it so whoever marks a connection)
    sqlite.lib.sqlite3_busy_timeout(handle, 0)
    held = HeldConnection(sqlite, handle, commits_held=not syncs, statements=statements)
    connection.info[_HELD] = held
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
    """Run the statements of ``engine``'s marked connections held, in a transaction, and
    their commits where they sync nothing."""
    commit = engine.dialect.do_commit

    def do_execute(_cursor: Any, statement: str, parameters: Any, context: Any) -> bool:
        held = context.root_connection.info.get(_HELD)
        if held is None or not held.statements or not held.in_transaction:
            return False  # the driver's
        if not bindable(parameters):
            return False  # the driver's
        match _kind(statement):
            case "write":
                compiled = context.compiled
                if context.isinsert and compiled is not None and compiled.postfetch_lastrowid:
                    return False  # SQLAlchemy reads the new row's id from the driver's cursor
                context._rowcount = held.run(statement, parameters)
            case "read":
                context.cursor = held.query(statement, parameters)
            case "returning":
                context.cursor = rows = held.query(statement, parameters)
                context._rowcount = rows.changes
            case None:
                return False
            case unreachable:
                assert_never(unreachable)
        return True

    def do_commit(connection: Any) -> None:
        # (the pool's connection: its ``info`` is the ``Connection``'s)
        held = connection.info.get(_HELD)
        if held is not None and held.commits_held and held.in_transaction:
            held.commit()  # the driver's then finds no transaction: it sends nothing
        commit(connection)

    sa.event.listen(engine, "do_execute", do_execute)
    # (the engine's own dialect, ``create_engine`` makes one per engine; an instance's
    # attribute, as mypy allows no assignment to a method)
    setattr(engine.dialect, "do_commit", do_commit)  # noqa: B010


@functools.lru_cache(maxsize=512)
def _kind(statement: str) -> Literal["write", "read", "returning"] | None:
    """``write``: a statement that writes and returns no rows; ``read``; ``returning``: a
    write with ``RETURNING``; None: anything else (``PRAGMA``, DDL), the driver's."""
    words = statement.lstrip().upper()
    if words.startswith(_READS):
        return "read"
    if words.startswith(_WRITES):
        return "returning" if "RETURNING" in words else "write"
    return None
