"""The event loop's thread's own connection to a SQLite file, for writes it makes only when
the file is free at once (``claim_now.py``, ``dbos_loop_writes.py``): its busy handler off
(``BEGIN IMMEDIATE`` is tried once, the loop never sleeps in SQLite) and no checkpoint in
its commits (milliseconds of copying and syncing the loop must not spend; the engine's
other connections checkpoint as before). Given up when done with, never back to the pool,
where another caller would meet its busy handler off."""

from __future__ import annotations

import weakref

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from eve.sessions.group_commit import busy_handler_off, given_up


class LoopConnection:
    """A connection of ``engine``'s pool, opened on first use and kept until ``drop``."""

    def __init__(self, engine: Engine) -> None:
        # weakly: its holder may be kept by engine (``dbos_loop_writes``'s registry)
        self._engine = weakref.ref(engine)
        self._connection: Connection | None = None

    @property
    def opened(self) -> Connection | None:
        """The connection if it is open (for tests)."""
        return self._connection

    def connect(self) -> Connection:
        """The connection, opened now if it is not."""
        if self._connection is None:
            engine = self._engine()
            if engine is None:
                raise sa.exc.InvalidRequestError("the engine is gone")
            self._connection = busy_handler_off(engine, "wal_autocheckpoint=0")
        return self._connection

    def undo(self, root: sa.RootTransaction) -> None:
        """Roll ``root`` back; a connection that cannot is given up."""
        try:
            root.rollback()
        except Exception:
            self.drop()

    def drop(self) -> None:
        """Give the connection up (the next ``connect`` opens another)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            given_up(connection)
