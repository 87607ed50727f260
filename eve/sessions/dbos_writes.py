"""DBOS's writes around every workflow on SQLite, several threads' in one transaction.

DBOS writes its system file twice a workflow, each time in a transaction of its own: at the
start the status row and the inputs (``init_workflow``), at the end the status and the
output (``dbos_sqlite._outcome``). A turn is one workflow, so a loaded worker opens two
transactions a turn on that file, each a pooled connection, the gate (``sqlite_gate.py``), a
``BEGIN IMMEDIATE`` and a ``COMMIT`` (the WAL frames of every page it touched: the status
table's and its indexes' last pages, written again by the next one). Each of those calls
lets go of the interpreter's lock and waits to get it back.

So a thread that comes to write while another's write runs queues here, and whoever holds
the file next (the *leader*, one of the waiting threads) runs every write queued at once in
one transaction, then hands the lead to the first write queued meanwhile: flat combining,
with no thread of its own, so a write alone costs what it did. As in eve's group commit
(``group_commit.py``) no caller hears of its write before it is durable, and a group is
optimistic: if any write of it raises, or the transaction fails (``BEGIN`` or ``COMMIT``),
nothing of it is durable and each write runs again alone, as DBOS runs it (its own
``db_retry`` around it), so a caller gets what its own write meets, never a neighbour's.

A request's write runs alone at once, as before: it waits for no group (the gate lets it
before the background writes, ``sqlite_gate.py``), and it fails fast where a group would
retry. A turn started by the message's own request (``claim_now.py``) is started once the
request is answered (``after_answer.py``): nothing waits on its start then, so it meets
the other workflows' starts and ends like any background write; should its group fail,
it runs alone as a request's write (fail fast, the sweep starts the turn later). What a
group runs of DBOS is its own code on the group's connection:
``SystemDatabase._insert_workflow_status`` for a start (its ``init_workflow`` is that in a
transaction), eve's ``dbos_sqlite._outcome`` for an end.

Measured in one process (2,000 workflows of DBOS on eve's SQLite engine, 200 at a time, the
combiner on and off in alternating rounds on a loaded machine): 1.50 against 1.65 ms of CPU
per workflow (medians of 8 rounds, 7 of them lower), a fifth of the writes in groups.

Only on SQLite, where a file has one writer at a time; PostgreSQL locks rows, and its start
and end are one statement each already (``dbos_start.py``, DBOS's own end).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy.engine import Connection, Engine

from eve.sessions.after_answer import answered_already
from eve.sessions.database_errors import failing_fast
from eve.sessions.sqlite_per_engine import PerEngine

T = TypeVar("T")

#: writes in one transaction at most: DBOS's start and end are two statements each
MOST_WRITES = 16


@dataclass(eq=False, slots=True)
class _Write:
    #: the write, on the group's connection in its transaction
    together: Callable[[Connection], Any]
    done: threading.Event = field(default_factory=threading.Event)
    #: this write's thread runs the next group (it was handed the lead)
    lead: bool = False
    #: the group committed: ``value`` is durable
    committed: bool = False
    #: the group did not commit: the write runs again alone, in its own thread
    alone: bool = False
    value: Any = None
    #: what its write raised, run alone by the lead (its own thread's)
    error: Exception | None = None

    @property
    def settled(self) -> bool:
        return self.committed or self.alone


class Combiner:
    """The writes of one engine's threads, run together when they meet."""

    def __init__(self, engine: Engine) -> None:
        # weakly: ``combiner_of`` keys its combiners by engine weakly, and a value holding
        # its key would keep every engine (its pool's connections) alive for good
        self._engine = weakref.ref(engine)
        self._lock = threading.Lock()
        self._queued: list[_Write] = []
        self._leading = False
        #: groups run, by size (for tests and the benchmark)
        self.groups: dict[int, int] = {}

    @property
    def engine(self) -> Engine:
        """The engine whose writes it runs (alive while its writers use it)."""
        engine = self._engine()
        assert engine is not None, "the engine's writers hold it"
        return engine

    def run(self, together: Callable[[Connection], T], alone: Callable[[], T]) -> T:
        """``together(connection)`` in a group's transaction, or ``alone()`` (a transaction
        of its own, in this thread) if it meets no other write, if its group fails, or if
        it is a request's (which waits for no one and fails fast: ``database_errors.py``)
        and not left behind by an answered one (``after_answer.py``); its value once
        durable."""
        if failing_fast() and not answered_already():
            return alone()
        write = _Write(together)
        with self._lock:
            self._queued.append(write)
            if not self._leading:
                self._leading = write.lead = True
        while not write.settled:
            if write.lead:
                self._lead(write, alone)
            else:
                write.done.wait()
                write.done.clear()
        error, write.error = write.error, None
        if error is not None:
            try:
                raise error
            finally:
                # the traceback holds this frame: with ``error`` in it, and in ``write``, a
                # cycle, freed only by a full collection
                del error
        if write.alone:
            return alone()
        value: T = write.value
        return value

    def _lead(self, mine: _Write, alone: Callable[[], Any]) -> None:
        """Run the writes queued (``mine`` first), then hand the lead on. A write that met
        no other runs alone here, with the lead held: what comes meanwhile queues."""
        with self._lock:
            group, self._queued = self._queued[:MOST_WRITES], self._queued[MOST_WRITES:]
        assert group[0] is mine, "the lead goes to the first write queued"
        try:
            if len(group) == 1:
                try:
                    mine.value = alone()
                except Exception as error:
                    mine.error = error
                mine.committed = True
            elif _together(self._engine, group):
                self.groups[len(group)] = self.groups.get(len(group), 0) + 1
        finally:
            with self._lock:
                for write in group:
                    write.lead = False
                    if not write.committed:
                        write.alone = True
                    write.done.set()
                if self._queued:
                    following = self._queued[0]
                    following.lead = True
                    following.done.set()
                else:
                    self._leading = False


def _together(engine_ref: weakref.ref[Engine], group: Sequence[_Write]) -> bool:
    """Whether the group committed (its writes settled); False: nothing of it is durable."""
    engine = engine_ref()
    if engine is None:  # (its writers hold it: not while a group is queued)
        return False
    values: list[Any] = []
    try:
        with engine.begin() as connection:
            for write in group:
                values.append(write.together(connection))
    except Exception:
        return False  # rolled back: each runs again alone
    for write, value in zip(group, values, strict=True):
        write.value, write.committed = value, True
    return True


#: the combiner of an engine's writes (one per engine)
combiner_of = PerEngine(Combiner)
