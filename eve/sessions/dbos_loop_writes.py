"""DBOS's start and end of a workflow run on the event loop's thread, when DBOS's SQLite file
is free at once, several in one transaction.

A turn is one DBOS workflow, and on SQLite DBOS writes its system file twice a turn: at the
start the status row and the inputs, at the end the status and the output. Each ran in a
thread of the turns' pool (DBOS's ``to_thread``), grouped with other threads' by
``dbos_writes.py``: the loop handed the write over, the thread waited for the interpreter's
lock, and each SQLite call there let the lock go and took it back, a sleeping thread's
wake-up on a loaded machine each time; the result came back through a turn of uvloop's loop.
The writes themselves are a few statements on a file in the page cache.

So a start or an end queues here (``run``), and a callback of the turns' work (it runs in
the serving loop's slices, ``eve/server/serving_loop.py``) runs every write queued at once,
in one transaction on a connection of its own, as a message's claim runs on eve's file
(``claim_now.py``): DBOS's gate taken only if free (``held_within(0)``), ``BEGIN
IMMEDIATE`` tried once (another process may hold the file), its busy handler off, and it
never checkpoints (the engine's connections leave that to a thread of their own). The loop
never waits. If the gate is held, the file busy, or anything of the group raises, nothing
of it is durable and each write is told ``NOT_NOW``: it runs in a thread as before, which
waits and retries as DBOS does, and its caller meets its own outcome there.

On a loop that runs no slices (PostgreSQL's, a test's asyncio loop), on PostgreSQL (round
trips the loop would wait for), or with ``EVE_DBOS_WRITES_ON_LOOP=off``, nothing queues here.
"""

from __future__ import annotations

import asyncio
import contextvars
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import Pool

from eve.sessions.after_answer import answered_already
from eve.sessions.claim_now import NOT_NOW, NotNow
from eve.sessions.database_errors import failing_fast
from eve.sessions.loop_connection import LoopConnection
from eve.sessions.sqlite_gate import SqliteGate, gate_taken_by_caller, take_write_lock, write_gate

T = TypeVar("T")

#: writes in one transaction at most: a group holds DBOS's file (and the loop) while it runs
MOST_WRITES = 64

_Queued = tuple[Callable[[Connection], Any], "asyncio.Future[Any]"]


class LoopWrites:
    """DBOS's writes on one SQLite engine, run on one event loop's thread."""

    def __init__(self, engine: Engine, gate: SqliteGate) -> None:
        self._own = LoopConnection(engine)
        self._gate = gate
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._queued: list[_Queued] = []
        self.closed = False
        #: writes committed on the loop, writes told ``NOT_NOW``, groups by size (for tests
        #: and the benchmark)
        self.on_loop = 0
        self.not_now = 0
        self.groups: dict[int, int] = {}

    def here(self) -> bool:
        """Whether a write of this context may queue here: on the loop these writes run on
        (the first that asked), a loop that runs the turns' work in slices, and not a
        request's write (it runs alone at once in its thread and fails fast, as in
        ``dbos_writes.py``)."""
        if self.closed or (failing_fast() and not answered_already()):
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        if not getattr(loop, "slicing", False):
            return False
        if self._loop is None:
            self._loop, self._thread = loop, threading.get_ident()
        return self._loop is loop

    def run(self, write: Callable[[Connection], T]) -> asyncio.Future[T | NotNow]:
        """A future of ``write(connection)``'s value once committed with the others queued,
        or of ``NOT_NOW`` (nothing of it committed): run it in a thread then. Called on the
        loop's thread, after ``here``."""
        assert self._loop is not None and self._thread == threading.get_ident()
        done: asyncio.Future[T | NotNow] = self._loop.create_future()
        self._queued.append((write, done))
        if len(self._queued) == 1:
            # in a context of its own: the turns' work, run in a slice (a request's context
            # would put it before the requests' own callbacks)
            self._loop.call_soon(self._run_queued, context=contextvars.Context())
        return done

    def _run_queued(self) -> None:
        group, self._queued = self._queued[:MOST_WRITES], self._queued[MOST_WRITES:]
        if self._queued and self._loop is not None:
            self._loop.call_soon(self._run_queued, context=contextvars.Context())
        values = self._together([write for write, _ in group])
        if values is None:
            self.not_now += len(group)
        else:
            self.on_loop += len(group)
            self.groups[len(group)] = self.groups.get(len(group), 0) + 1
        for index, (_, done) in enumerate(group):
            if not done.done():
                done.set_result(NOT_NOW if values is None else values[index])

    def _together(self, writes: list[Callable[[Connection], Any]]) -> list[Any] | None:
        """Each write's value, committed in one transaction; None: nothing committed."""
        if self.closed:
            return None
        with self._gate.held_within(0.0) as free:
            if not free:
                return None
            try:
                connection = self._own.connect()
                root = connection.begin()
            except (sa.exc.SQLAlchemyError, sqlite3.Error):
                self._own.drop()
                return None
            try:
                gate_taken_by_caller(connection)
                take_write_lock(connection.connection.dbapi_connection, patience=0.0)
                values = [write(connection) for write in writes]
                root.commit()
            except Exception:
                # busy, a fault, or a write's own error: each runs again in its thread
                self._own.undo(root)
                return None
            return values

    def close(self) -> None:
        """No more writes here (those queued go to threads); its connection given up (never
        back to the pool: its busy handler is off). On the loop's thread."""
        self.closed = True
        self._own.drop()


#: by the engine's pool, as ``sqlite_gate.write_gate`` finds its gate
_WRITES: WeakKeyDictionary[Pool, LoopWrites] = WeakKeyDictionary()


def writes_on_loop(engine: Engine) -> LoopWrites | None:
    """Let DBOS's writes on ``engine`` (a SQLite engine whose writes ``gate_writes`` gates)
    run on the loop from now on; None if it has no gate (PostgreSQL's)."""
    gate = write_gate(engine)
    if gate is None:
        return None
    made = _WRITES[engine.pool] = LoopWrites(engine, gate)
    return made


def writes_of(engine: Engine) -> LoopWrites | None:
    """The writes on the loop ``writes_on_loop`` made for ``engine`` (tests, the benchmark)."""
    return _WRITES.get(engine.pool)


def loop_writes(engine: Engine) -> LoopWrites | None:
    """Where a write of DBOS's on ``engine`` in this context may run on the loop, if it may."""
    found = _WRITES.get(engine.pool)
    return found if found is not None and found.here() else None


def stop_writes_on_loop(engine: Engine) -> None:
    """Back to threads for every write on ``engine`` (a stop; on the loop's thread)."""
    found = _WRITES.pop(engine.pool, None)
    if found is not None:
        found.close()
