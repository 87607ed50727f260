"""One transaction at a time on eve's SQLite file within a process, a request's first.

SQLite has one writer at a time, and a connection that finds the file locked sleeps in its
busy handler (1 ms, then longer, up to 100 ms a try) and tries again: the lock goes to
whoever happens to try when it is free, not to whoever waited longest. Under load (hundreds
of sessions whose writers commit every few milliseconds) that convoy held every pooled
connection asleep, and a request waited behind it for a connection, then for the lock: at
500 concurrent sessions the first ``POST /session`` of a client waited 20 to 60 s.

So this process's write transactions on the file queue here instead, before they take a
pooled connection: each waits on a condition (woken when the file is free, no sleeping), and
a request's transaction (``fail_fast``: an HTTP request is being answered) goes before the
background ones (turns' events, sweeps, heartbeats) waiting with it. Reads queue too,
though in WAL mode they need not (``SessionStore._read`` says what that cost). In a worker
few threads ever wait here: the turns' writes queue on the loop's side and one thread runs
them (``writer_lane.py``), the turns' reads take four threads, so what meets here is those,
a request's calls and the rare call of another thread. A thread already holding the gate
passes through again (a transaction's callback may call the store). PostgreSQL needs none
of this: it locks rows, not the database.

DBOS's system file has the same convoy (every step's record is a ``BEGIN IMMEDIATE`` write,
and at 100 sessions the threads recording steps slept in the busy handler while the file
was free), but DBOS opens its transactions itself. ``gate_writes`` puts its engine's write
transactions through a gate of their own, from the first write statement to the commit or
rollback (reads run outside a transaction there and pass freely). A write waits at most
``patience`` seconds for the gate and then goes on to SQLite's own lock as before: the gate
only orders, it can never hold a write up for good.

Across processes on eve's file (``eve serve --workers``) a gate with a ``signal``
(``sqlite_requests.py``) also puts the other processes' messages first: a message's claim
that waits says so there (``claim_now.LoopClaims.marked``), a group of the turns' writes
ends early for it, and a background transaction, before it takes the gate, waits
``request_patience`` seconds at most while any process's claim waits.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from weakref import WeakKeyDictionary

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.pool import Pool

from eve.sessions.database_errors import failing_fast
from eve.sessions.sqlite_requests import RequestSignal

#: the key of a connection's ``info`` while its transaction holds a write gate
_HOLDS = "eve_write_gate"
#: the key of a connection's ``info`` while its busy handler is off (``take_write_lock``)
_BUSY_OFF = "eve_busy_off"
#: the statements that start a write transaction (pysqlite opens it before these)
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
#: the first and the longest pause between two tries for the file's lock while another
#: process holds it (``take_write_lock``)
FIRST_PAUSE = 0.0001
LONGEST_PAUSE = 0.002
#: how long a background transaction waits while another process's request waits for the
#: file (``SqliteGate.request_patience``): a request on another worker's event loop tries
#: again at that loop's next pause, every slice of 2 ms when it keeps up
REQUEST_PATIENCE_SECONDS = 0.01
#: the pause between two looks at the signal while a request waits
_LOOK_PAUSE = 0.0005
#: the context's transactions are a message's claim that waited already (``claims_first``)
_CLAIM_FIRST: ContextVar[bool] = ContextVar("eve_claim_first", default=False)
#: the gate ``gate_writes`` put an engine's writes through, by its pool (which the engines
#: ``execution_options`` derives share with it: DBOS's ``SystemDatabase.engine`` is one)
_GATES: WeakKeyDictionary[Pool, SqliteGate] = WeakKeyDictionary()


class SqliteGate:
    def __init__(
        self,
        *,
        signal: RequestSignal | None = None,
        request_patience: float = REQUEST_PATIENCE_SECONDS,
    ) -> None:
        #: where the requests of every process on the file say they wait (None: this
        #: process's alone are put first)
        self.signal = signal
        self.request_patience = request_patience
        lock = threading.Lock()
        self._claims = threading.Condition(lock)
        self._urgent = threading.Condition(lock)
        self._background = threading.Condition(lock)
        self._holder: int | None = None
        self._depth = 0
        self._urgent_waiting = 0
        #: of those, the claims of messages that waited already (``claims_first``)
        self._claims_waiting = 0
        #: transactions that had to wait for another (for tests and the benchmark)
        self.waited = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        """The file to this thread for the block; a request's transaction first."""
        self._acquire(urgent=failing_fast())
        try:
            yield
        finally:
            self._release()

    @contextmanager
    def held_within(self, patience: float) -> Iterator[bool]:
        """The file to this thread for the block if it is had within ``patience`` seconds,
        as a request's (True); else nothing (False): for a caller that may wait only that
        long, the event loop's thread (``claim_now.py``)."""
        taken = self._acquire(urgent=True, patience=patience)
        try:
            yield taken
        finally:
            if taken:
                self._release()

    @contextmanager
    def held_now(self) -> Iterator[bool]:
        """The file to this thread for the block if no other thread holds it and no
        request waits for it, of this process or another (True); else nothing (False), at
        once and without sleeping: for the event loop's groups of the turns' writes
        (``loop_writes.py``), which go after every request, as the background's do."""
        taken = self._take_now()
        try:
            yield taken
        finally:
            if taken:
                self._release()

    def _take_now(self) -> bool:
        if self.requests_waiting:
            return False
        with self._urgent:
            if self._holder is not None or self._urgent_waiting:
                return False
            self._holder, self._depth = threading.get_ident(), 1
            return True

    @property
    def requests_waiting(self) -> bool:
        """A request's transaction waits for the gate, or a request of any process for the
        file (a group commit ends early for it)."""
        if self._urgent_waiting > 0:
            return True
        return self.signal is not None and self.signal.waiting

    def _acquire(self, *, urgent: bool, patience: float | None = None) -> bool:
        """Take the gate; False (not taken) if ``patience`` seconds went by first."""
        me = threading.get_ident()
        deadline = None if patience is None else time.monotonic() + patience
        if not urgent and self._holder != me and self.signal is not None:
            # (before the gate: this process's own waiting request needs the gate)
            wait_for_requests(self.signal, self.request_patience)
        with self._urgent:
            if self._holder == me:
                self._depth += 1
                return True
            if urgent:
                claim = _CLAIM_FIRST.get()
                self._urgent_waiting += 1
                self._claims_waiting += claim
                try:
                    while self._holder is not None or (self._claims_waiting and not claim):
                        self.waited += 1
                        if not (self._claims if claim else self._urgent).wait(_left(deadline)):
                            return False
                finally:
                    self._urgent_waiting -= 1
                    self._claims_waiting -= claim
            else:
                while self._holder is not None or self._urgent_waiting:
                    self.waited += 1
                    if not self._background.wait(_left(deadline)):
                        return False
            self._holder, self._depth = me, 1
            return True

    def _release(self) -> None:
        with self._urgent:
            self._depth -= 1
            if self._depth:
                return
            self._holder = None
            # one waiter, a request's if any: waking every waiter would make each of
            # hundreds of threads look and sleep again at every commit
            if self._claims_waiting:
                self._claims.notify()
            elif self._urgent_waiting:
                self._urgent.notify()
            else:
                self._background.notify()


@contextmanager
def claims_first() -> Iterator[None]:
    """A message's claim that found the file taken is made in the block: at every gate it
    goes before the requests' other transactions (a stream's reads, at 1,000 sessions a
    queue of them), as those go before the background's. A thread's claim waited there p50
    79 ms, p95 1.0 s, behind them (``sqlite-2w-1000``)."""
    token = _CLAIM_FIRST.set(True)
    try:
        yield
    finally:
        _CLAIM_FIRST.reset(token)


def wait_for_requests(signal: RequestSignal, patience: float) -> None:
    """Return once no process's request waits for the file, or after ``patience`` seconds:
    a request waits only for a write under way, so the wait is short, and bounded lest
    requests that come one after another hold the turns' writes up for good."""
    deadline = time.monotonic() + patience
    while signal.waiting and time.monotonic() < deadline:
        time.sleep(_LOOK_PAUSE)


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def take_write_lock(raw: Any, *, patience: float) -> None:
    """``BEGIN IMMEDIATE`` on ``raw``, a connection whose busy handler is off, tried again
    after short pauses while another process holds the file, for ``patience`` seconds.

    SQLite's own busy handler sleeps 1, 2, 5, 10, 15, 20, 25 ms... between tries, so with
    two workers on one file the one that found it locked slept for up to 25 ms for a lock
    freed after one, its whole writer lane (every turn's events) waiting with it."""
    deadline = time.monotonic() + patience
    pause = FIRST_PAUSE
    while True:
        try:
            raw.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, LONGEST_PAUSE)


def gate_writes(engine: Engine, gate: SqliteGate, *, patience: float, busy_timeout: float) -> None:
    """Put ``engine``'s write transactions through ``gate`` (an engine whose transactions
    another library opens: DBOS's system database), each taking the file's lock in short
    pauses (``take_write_lock``, for ``busy_timeout`` seconds at most) rather than in
    SQLite's busy handler.

    The handler is off from a connection's first write and on again only before a statement
    other than a write runs outside a transaction (a read, DDL): switched per transaction,
    off at its first write and on when the pool took it back, it cost each of DBOS's two
    writes a turn two ``PRAGMA`` calls, each a hand-off of the interpreter's lock, and
    py-spy put 7.6 % of a loaded worker's busy samples in them. DBOS's reads on this file
    are rare, so a connection in the pool stays switched off."""

    handler_on = f"PRAGMA busy_timeout={int(busy_timeout * 1000)}"

    def before(conn: sa.Connection, _cursor: Any, statement: str, *_args: Any) -> None:
        if _HOLDS in conn.info:
            return
        raw: Any = conn.connection.dbapi_connection
        if not statement.lstrip()[:7].upper().startswith(_WRITES):
            if _BUSY_OFF in conn.info and raw is not None and not raw.in_transaction:
                # a statement outside a write's transaction (a read, a migration's DDL):
                # SQLite's busy handler again, as a connection it was never off on
                raw.execute(handler_on)
                del conn.info[_BUSY_OFF]
            return
        begins = raw is not None and not raw.in_transaction
        if begins and _BUSY_OFF not in conn.info:
            # (before the gate: the gate's holder need not wait for this statement too)
            raw.execute("PRAGMA busy_timeout=0")
            conn.info[_BUSY_OFF] = True
        # False: it went on without the gate, and holds SQLite's lock from here on, so its
        # next write must not wait for the gate (whose holder may be waiting for that lock)
        conn.info[_HOLDS] = gate._acquire(urgent=failing_fast(), patience=patience)
        if begins:
            # the BEGIN pysqlite would send before this statement, in pauses of our own
            take_write_lock(raw, patience=busy_timeout)

    def let_go(connection: Any) -> None:
        # the pool's connection (its ``info`` is the transaction's); SQLAlchemy's first
        # connection has none (it raises)
        try:
            info = connection.info
        except (AttributeError, NotImplementedError):
            return
        if info.pop(_HOLDS, False):
            gate._release()

    def returned(_dbapi: Any, record: Any, *_state: Any) -> None:
        # a connection given back mid-transaction (its rollback is the pool's own); its
        # busy handler stays off until a statement other than a write runs on it
        if record.info.pop(_HOLDS, False):
            gate._release()

    _GATES[engine.pool] = gate
    sa.event.listen(engine, "before_cursor_execute", before)
    _after_ending(engine, let_go)
    sa.event.listen(engine, "checkin", returned)
    sa.event.listen(engine, "invalidate", returned)


def write_gate(engine: Engine) -> SqliteGate | None:
    """The gate ``gate_writes`` put ``engine``'s writes through, if it did."""
    return _GATES.get(engine.pool)


def gate_taken_by_caller(connection: sa.Connection) -> None:
    """``connection``'s transaction, begun by its caller (``BEGIN IMMEDIATE``) with the gate
    held (``held_within``), passes ``gate_writes``'s gate and its lock-taking until it ends:
    its caller lets the gate go (``dbos_loop_writes.py``)."""
    connection.info[_HOLDS] = False  # False: ending it lets no gate go


def _after_ending(engine: Engine, then: Callable[[Any], None]) -> None:
    """``then(connection)`` once a transaction of ``engine`` ended: after its ``COMMIT`` or
    ``ROLLBACK`` ran, failed or not.

    SQLAlchemy's ``commit`` and ``rollback`` events come before the statement: a gate let go
    there woke its next holder while the file was still locked, and that one's ``BEGIN
    IMMEDIATE`` failed and paused (``take_write_lock``), at nearly every hand-over of a
    loaded worker, since the ``COMMIT`` lets go of the interpreter's lock. The engine's
    dialect is its own (``create_engine`` makes one per engine), so its two methods are
    wrapped here, on the instance; the pool ends a transaction it finds open through them
    too."""
    dialect = engine.dialect
    commit, rollback = dialect.do_commit, dialect.do_rollback

    def do_commit(connection: Any) -> None:
        try:
            commit(connection)
        finally:
            then(connection)

    def do_rollback(connection: Any) -> None:
        try:
            rollback(connection)
        finally:
            then(connection)

    # (an instance's attribute, as mypy allows no assignment to a method)
    setattr(dialect, "do_commit", do_commit)  # noqa: B010
    setattr(dialect, "do_rollback", do_rollback)  # noqa: B010
