"""Event commits told to every worker on PostgreSQL, off the write path: ``NOTIFY eve_events``
sent after the rows commit, coalesced, from a thread of its own.

A transaction that notifies takes one lock for the whole database from just before its
commit until after it (PostgreSQL's ``PreCommit_Notify``: notifications enter the queue in
commit order), so every notifying commit waits for the one before to flush its WAL. The
event log's writes notified inside their own transactions, and under load (hundreds of
turns writing at once, ``fsync`` on) they queued one fsync at a time behind that lock,
each holding a pool connection while it waited. Sent here instead, the event rows commit
in parallel (group commit), and the notifications of ``COALESCE_SECONDS`` go in one
statement, committed as it runs (``pg_pools.each_commits``), that neither writes rows nor
waits for its WAL (``synchronous_commit`` off, for it alone: a notification is a hint, the
rows it points at are durable already). A flush that fails waits the database out as the
store's calls do (``db_retry.waited_out``), until the store closes.

Each notification names the store that sent it: the worker that wrote the events handed them
to its own followers as it committed them (``SessionWriter``), so its listener skips them;
under load it heard them before that hand-over often enough to read every batch back.

A notification still means the rows are there: it is sent only after their commit. One
that is never sent (the process dies first, the store closes while the database is away,
a failure that is no outage) costs another worker's followers a heartbeat's wait
(``event_feed.py``), not an event.
"""

from __future__ import annotations

import logging
import math
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from eve.sessions.database_errors import failure_kind, transient
from eve.sessions.db_retry import waited_out
from eve.sessions.pg_pools import each_commits

log = logging.getLogger("eve.sessions")

#: the channel every worker's listener hears (``pg_listener.py``)
EVENTS_CHANNEL = "eve_events"
#: how long commits gather before one statement notifies them all. Each statement wakes this
#: thread and every worker's listener (this one's too, which skips its own), each a hand-off
#: of the interpreter's lock; at 5 ms a worker at 1,000 live sessions sent 1.4 a turn. A
#: notification only tells another worker's followers sooner than their heartbeat would
COALESCE_SECONDS = 0.02

# one statement: no WAL wait at its commit (see above; ``set_config``'s local value lasts
# until the statement's own transaction has committed), then a notification per payload
_NOTIFY = sa.text(
    "SELECT pg_notify(:channel, p) "
    "FROM (SELECT set_config('synchronous_commit', 'off', true)) AS quick, "
    "unnest(CAST(:payloads AS text[])) AS p"
)


class PgNotifier:
    """Notifies ``EVENTS_CHANNEL`` with ``<origin> <session id>:<high index>`` for committed
    events; ``origin`` names this store, whose own listener skips what it sent."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        #: names this store's notifications: its worker's feeds have those events already
        self.origin = secrets.token_hex(6)
        self._lock = threading.Lock()
        #: the highest committed index of each session not yet notified
        self._pending: dict[str, int] = {}
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        #: statements that notified (for tests and the benchmark)
        self.flushes = 0

    def committed(self, session_id: str, high: int) -> None:
        """The session's events up to ``high`` are committed: tell every worker soon."""
        with self._lock:
            if self._closed:
                return
            self._pending[session_id] = max(self._pending.get(session_id, -1), high)
            if self._thread is None:
                # started at the first commit: a store that never writes events has none
                self._thread = threading.Thread(
                    target=self._run, name="eve-pg-notifier", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def close(self) -> None:
        """Send what is pending, then stop the thread."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if not self._closed:
                # the commits of the next moment join this one's statement
                time.sleep(COALESCE_SECONDS)
            self._wake.clear()
            try:
                waited_out(self._flush, deadline=math.inf, stopped=lambda: self._closed)
            except Exception as error:
                if self._closed:
                    return  # stopping while the database is away: nothing waits for it
                # no outage but a refusal, which sending again would meet again: its batch
                # is dropped (``_taken``), the commits that came since are sent
                log.warning("event notifications not sent: %s", failure_kind(error))
            with self._lock:
                if self._closed and not self._pending:
                    return

    def _flush(self) -> None:
        with self._taken() as batch:
            if not batch:
                return
            payloads = [f"{self.origin} {session_id}:{high}" for session_id, high in batch.items()]
            with each_commits(self.engine) as c:
                c.execute(_NOTIFY, {"channel": EVENTS_CHANNEL, "payloads": payloads})
            self.flushes += 1

    @contextmanager
    def _taken(self) -> Iterator[dict[str, int]]:
        """The pending highs, handed back (merged with newer ones) if the flush fails for an
        outage, to be sent again; dropped if it is refused."""
        with self._lock:
            batch, self._pending = self._pending, {}
        try:
            yield batch
        except BaseException as error:
            if transient(error) or not isinstance(error, Exception):
                with self._lock:
                    for session_id, high in batch.items():
                        self._pending[session_id] = max(self._pending.get(session_id, -1), high)
            raise
