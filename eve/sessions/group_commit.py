"""Group commit: the writes queued together in the writer lane, in one transaction on eve's
SQLite file.

A loaded worker's turns wrote eve's file about ten times a turn, each write a transaction of
its own: a pooled connection, the gate, a ``BEGIN``, the statements, a ``COMMIT`` (the WAL
frames of every page it touched, written again by the next write that touches them). When
the writer lane (``writer_lane.py``) finds several writes queued, it runs them here instead:
one ``BEGIN IMMEDIATE``, the writes one after another, one ``COMMIT``, and only then does
any caller learn how its write went: none sees its write done before it is durable.

- **No savepoints.** Each write ran in a savepoint of its own (``SAVEPOINT`` and
  ``RELEASE``: two statements a write, a group of 4 held the file for 10 statements besides
  its writes'). A statement costs SQLite a few microseconds but the driver lets go of the
  interpreter's lock around it, and on a busy worker the lane's thread then waits for the
  event loop to give the lock back (up to the switch interval, 1 ms) while it holds the file:
  py-spy put 7.4 % of a loaded worker's busy samples in those statements, and with two
  workers the other one waits for the file meanwhile. Failures are rare, so a group is
  optimistic instead: what a write does in the shared transaction is undone only with the
  whole group.
- **A write whose transaction raises** (an ``IntegrityError`` from a taken event index, a
  missing checkpoint: any exception that leaves a ``with store._tx()``, even one the method
  then catches) undoes the whole group, and every write of it runs again alone, in
  transactions of its own, as if it had never been grouped: the one that raised raises
  again there (or not, if it depended on its neighbours) and its caller gets what its own
  run meets. An exception raised outside its transactions changed nothing in them: its
  caller gets it and the group goes on (what a method changed in an earlier transaction of
  its own stays, as it would have, committed).
- **A request's write goes first.** The gate lets a request's transaction in before the
  turns' (``sqlite_gate.py``), but a group holds the gate for all its writes: a message's
  claim waited behind up to four. Now a group commits what it has run as soon as a request
  waits at the gate, after the write running then, and the lane runs the rest as another
  group once the request is through; so a group may be longer (``MOST_WRITES``) without a
  request waiting for all of it.
- **A transaction that breaks** (a fault of the file: locked past the busy timeout, gone,
  full, an I/O error, after which SQLite may have rolled the whole transaction back by
  itself; a ``COMMIT`` that fails) is rolled back whole, and every write of it runs again
  alone too. Each write here is a store method that declared itself ``write``
  (``store_lanes.py``), made to run again after a failed transaction
  (``db_retry.retried``), so alone it waits out a transient fault as it always did, and a
  caller gets the error its own write meets, never a neighbour's. Inside the group a fault
  is not waited out (``db_retry.tried_once``): the file stays locked meanwhile.

- **Less with the file held.** A group's prepared statements run on the driver's cursor,
  without SQLAlchemy's execution context (``group_statements.py``), and its writes' rows of
  events and step records go in as one INSERT a table, just before a statement that names
  the table or the commit (``group_inserts.py``): a group of six writes of the turns ran
  about 22 statements, now about 17.

What a method does after its transaction (PostgreSQL's notifier, after ``append_events``)
would run before the group's commit here: only a SQLite store groups its writes, and it
has no notifier.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from eve.sessions.db_retry import tried_once
from eve.sessions.group_inserts import GroupInserts
from eve.sessions.group_statements import Rows, run_raw
from eve.sessions.sqlite_gate import SqliteGate, take_write_lock
from eve.sessions.sqlite_per_engine import PerEngine

#: writes in one transaction at most. At N = 1,000 (``bench/scale.py``) the lane was full all
#: the time: with 16, a POST's p95 was 651 ms (74 turns/s), with 4 164 ms (80 turns/s), when
#: a request's write waited for the whole group; it now waits for one write of it
MOST_WRITES = 8


class Joinable(Protocol):
    """What a group needs of the store whose writes it runs."""

    engine: Engine
    gate: SqliteGate | None
    #: how long a write waits for another process's lock on the file
    busy_timeout: float


@dataclass(frozen=True, slots=True)
class Returned:
    value: Any


@dataclass(frozen=True, slots=True)
class Raised:
    error: BaseException


Outcome = Returned | Raised


class Busy(Enum):
    """Another process held the file for the group's wait: nothing of it ran."""

    BUSY = "busy"


BUSY = Busy.BUSY


class SharedTransaction:
    """The transaction a group's writes join (``SessionStore._tx``)."""

    def __init__(self, engine: Engine, connection: Connection, *, lanes: bool = False) -> None:
        self.engine = engine
        self.connection = connection
        #: the writer lane's group (``run_together``, which inserts what it kept before its
        #: commit): its statements run on the driver's cursor and its rows' INSERTs wait to
        #: go together; not a claim's (``claim_now.py``), which commits on its own
        self.lanes = lanes
        self._raw: Any = connection.connection.dbapi_connection
        # the group's statements run on it (``group_statements.py``)
        self._cursor: Any = None
        # the rows its writes insert, until its next other statement (``group_inserts.py``)
        self._inserts = GroupInserts()
        #: an exception left a write's transaction: what it did is in the shared one, so
        #: the whole group is undone and each write runs again alone
        self.undone = False

    def run(self, sql: str, params: Sequence[Any]) -> Rows:
        """``sql`` in the group's transaction, on the driver's cursor, after the rows kept
        to insert into a table it names."""
        self.flush_for(sql)
        return self._run(sql, params)

    def insert_later(self, sql: str, params: Sequence[Any], *, rows: int, every_row: bool) -> None:
        """Keep the rows of ``sql``, an INSERT, for one statement with the group's other
        rows of its table (``GroupInserts.add``)."""
        self._inserts.add(sql, params, rows=rows, every_row=every_row)

    def flush_for(self, sql: str) -> None:
        """``flush`` if ``sql`` names a table with rows kept."""
        if self._inserts and self._inserts.needed_by(sql):
            self.flush()

    def flush(self) -> None:
        """Insert the rows kept; a row that had to be new and was not undoes the group."""
        if self._inserts and not self._inserts.flush(self._run):
            self.undone = True

    def _run(self, sql: str, params: Sequence[Any]) -> Rows:
        if self._cursor is None:
            self._cursor = self._raw.cursor()
        return run_raw(self.connection, self._cursor, sql, params)

    @contextmanager
    def part(self) -> Iterator[Connection]:
        """The shared connection for one transaction of a write."""
        try:
            yield self.connection
        except BaseException:
            self.undone = True
            raise

    def begin(self, *, patience: float) -> None:
        # to the driver's connection itself: SQLAlchemy's pysqlite dialect would open a
        # deferred transaction at the first write
        take_write_lock(self._raw, patience=patience)

    @property
    def active(self) -> bool:
        """The transaction is still open (SQLite rolls one back by itself on some faults)."""
        return bool(self._raw.in_transaction)


_current = threading.local()


def joined(engine: Engine) -> SharedTransaction | None:
    """The shared transaction on ``engine`` this thread's writes join now, if any."""
    shared: SharedTransaction | None = getattr(_current, "shared", None)
    return shared if shared is not None and shared.engine is engine else None


@contextmanager
def joining(shared: SharedTransaction) -> Iterator[None]:
    """This thread's writes on ``shared``'s engine join ``shared`` for the block (a claim
    the event loop runs in a transaction of its own: ``claim_now.py``)."""
    _current.shared = shared
    try:
        yield
    finally:
        _current.shared = None


def run_together(store: Joinable, calls: Sequence[Callable[[], Any]]) -> list[Outcome] | None:
    """``calls`` (each a call of a ``write`` method of ``store``) in one transaction;
    the outcomes once it committed, of all of them or of the first few if a request came to
    wait for the gate meanwhile (the caller runs the rest after it); None if it broke before
    and nothing of it is durable: the caller runs each again alone. Raises only after the
    commit (the connection would not go back), when whether the writes are durable is
    unknown."""
    outcomes = group_on(_kept(store.engine), store, calls, patience=store.busy_timeout)
    return None if outcomes is BUSY else outcomes


def group_on(
    kept: GroupConnection, store: Joinable, calls: Sequence[Callable[[], Any]], *, patience: float
) -> list[Outcome] | Busy | None:
    """``run_together`` on ``kept``'s connection, the file's lock waited for ``patience``
    seconds at most: ``BUSY`` if another process held it that long (nothing ran). The event
    loop's groups (``loop_writes.py``) run here with none, on a connection of their own,
    their thread holding the gate already."""
    gate = store.gate
    assert gate is not None, "only a SQLite store groups its writes"
    with kept.lock:
        connection = kept.take(store.engine)
        if connection is None:
            return None
        shared = SharedTransaction(store.engine, connection, lanes=True)
        try:
            with gate.held():
                outcomes = _committed(shared, calls, gate, patience=patience)
        except BaseException:
            kept.give_up()
            raise
        if outcomes is None:
            kept.give_up()  # (rolled back, or it tried: not worth trusting again)
        return outcomes


class GroupConnection:
    """The connection an engine's groups run on, kept from one group to the next with its
    busy handler off (``take_write_lock`` takes the file's lock in pauses of its own).

    A group took a pooled connection, turned its busy handler off, and on again before
    giving it back (other transactions on the pool wait in the handler): two ``PRAGMA``
    calls a group, each a hand-off of the interpreter's lock, outside the gate but on the
    writer lane's thread, and 3.4 % of a loaded worker's busy samples in py-spy. Only the
    group's thread uses this one, under ``lock``; the pool never sees it again until the
    engine is disposed (then it is closed) or a group gives it up (a fault). The event
    loop's groups keep one of their own (``loop_writes.py``)."""

    def __init__(self, engine: Engine) -> None:
        self.lock = threading.Lock()
        self.connection: Connection | None = None
        sa.event.listen(engine, "engine_disposed", lambda _engine: self.give_up())

    def take(self, engine: Engine) -> Connection | None:
        """The kept connection, opened (its busy handler off) if there is none; None if it
        could not be."""
        if self.connection is not None:
            return self.connection
        try:
            # (outside the gate: its statement lets go of the interpreter's lock, and on a
            # busy worker waits up to a switch interval to get it back)
            connection = busy_handler_off(engine)
        except Exception:
            return None
        # a statement SQLAlchemy runs on it in a group comes after the rows the group
        # kept to insert (``group_inserts.py``)
        sa.event.listen(connection, "before_cursor_execute", _flush_first)
        self.connection = connection
        return connection

    def give_up(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            # never back to the pool: it is left without its busy handler
            given_up(connection)


_kept = PerEngine(GroupConnection)


def _flush_first(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
    shared: SharedTransaction | None = getattr(_current, "shared", None)
    if shared is not None:
        shared.flush_for(sql)


def busy_handler_off(engine: Engine, *pragmas: str) -> Connection:
    """A connection of ``engine``'s pool with SQLite's busy handler off (its caller tries
    ``BEGIN IMMEDIATE`` in pauses of its own, or once) and ``pragmas`` run on it; given up
    if they fail (what they raised is raised). Never back to the pool (``given_up``)."""
    connection = engine.connect()
    raw: Any = connection.connection.dbapi_connection
    try:
        for pragma in ("busy_timeout=0", *pragmas):
            raw.execute(f"PRAGMA {pragma}")
    except BaseException:
        given_up(connection)
        raise
    return connection


def given_up(connection: Connection) -> None:
    """Close ``connection`` for good, never back to the pool (its busy handler is off)."""
    _quietly(connection.invalidate)
    _quietly(connection.close)


def _committed(
    shared: SharedTransaction,
    calls: Sequence[Callable[[], Any]],
    gate: SqliteGate,
    *,
    patience: float,
) -> list[Outcome] | Busy | None:
    root = shared.connection.begin()
    try:
        try:
            # the file's write lock for the whole group at once: with a read first, a
            # later write of the group would fail if another process wrote in between
            shared.begin(patience=patience)
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode != sqlite3.SQLITE_BUSY:
                raise
            _quietly(root.rollback)
            return BUSY  # another process holds the file: nothing ran
        outcomes = _each(shared, calls, gate)
        if outcomes is not None:
            shared.flush()
        if outcomes is not None and not shared.undone:
            root.commit()
            return outcomes
    except Exception:
        pass  # BEGIN or COMMIT failed
    # (after a failed commit too: SQLite may have kept the transaction open)
    _quietly(root.rollback)
    return None


def _each(
    shared: SharedTransaction, calls: Sequence[Callable[[], Any]], gate: SqliteGate
) -> list[Outcome] | None:
    outcomes: list[Outcome] = []
    _current.shared = shared
    try:
        with tried_once():
            for call in calls:
                try:
                    outcomes.append(Returned(call()))
                except Exception as error:
                    # raised outside its transactions: nothing of it to undo
                    outcomes.append(Raised(error))
                except BaseException:
                    return None
                if shared.undone or not shared.active:
                    # a transaction of the write raised (even if the write went on), or the
                    # transaction is gone from under the writes (a method swallowed a fault)
                    return None
                if gate.requests_waiting:
                    break  # the request's write goes next; the rest after it
    finally:
        _current.shared = None
    return outcomes


def _quietly(undo: Callable[[], Any]) -> None:
    # undoing what already failed: the error worth raising is the one that made it fail
    with contextlib.suppress(Exception):
        undo()
