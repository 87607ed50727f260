"""Event commits told to every worker on PostgreSQL, off the write path: ``NOTIFY eve_events``
sent after the rows commit, coalesced, from a thread of its own.

A transaction that notifies takes one lock for the whole database from just before its
commit until after it (PostgreSQL's ``PreCommit_Notify``: notifications enter the queue in
commit order), so every notifying commit waits for the one before to flush its WAL. The
event log's writes notified inside their own transactions, and under load (hundreds of
turns writing at once, ``fsync`` on) they queued one fsync at a time behind that lock,
each holding a pool connection while it waited. Sent here instead, the event rows commit
in parallel (group commit), and the notifications of ``COALESCE_SECONDS`` go in one short
transaction that neither writes rows nor waits for its WAL (``synchronous_commit`` off:
a notification is a hint, the rows it points at are durable already).

Each notification names the store that sent it: the worker that wrote the events handed them
to its own followers as it committed them (``SessionWriter``), so its listener skips them;
under load it heard them before that hand-over often enough to read every batch back.

A notification still means the rows are there: it is sent only after their commit. One
that is never sent (the process dies first, the database is away for longer than a flush
keeps retrying) costs another worker's followers a heartbeat's wait (``event_feed.py``),
not an event.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Engine

log = logging.getLogger("eve.sessions")

#: the channel every worker's listener hears (``pg_listener.py``)
EVENTS_CHANNEL = "eve_events"
#: how long commits gather before one transaction notifies them all
COALESCE_SECONDS = 0.005
#: after a failed flush, the first wait before the next; doubled each failure, up to the last
RETRY_SECONDS = (0.05, 2.0)

# one statement: no WAL wait at commit (see above), then a notification per payload
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
        #: transactions that notified (for tests and the benchmark)
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
        delay = RETRY_SECONDS[0]
        while True:
            self._wake.wait()
            if not self._closed:
                # the commits of the next moment join this one's transaction
                time.sleep(COALESCE_SECONDS)
            self._wake.clear()
            try:
                self._flush()
                delay = RETRY_SECONDS[0]
            except Exception as error:
                if self._closed:
                    return  # stopping while the database is away: nothing waits for it
                if delay == RETRY_SECONDS[0]:  # once per outage, not per attempt
                    log.warning("event notifications not sent: %s", type(error).__name__)
                time.sleep(delay)
                delay = min(delay * 2, RETRY_SECONDS[1])
                self._wake.set()
                continue
            with self._lock:
                if self._closed and not self._pending:
                    return

    def _flush(self) -> None:
        with self._taken() as batch:
            if not batch:
                return
            payloads = [f"{self.origin} {session_id}:{high}" for session_id, high in batch.items()]
            with self.engine.begin() as c:
                c.execute(_NOTIFY, {"channel": EVENTS_CHANNEL, "payloads": payloads})
            self.flushes += 1

    @contextmanager
    def _taken(self) -> Iterator[dict[str, int]]:
        """The pending highs, handed back (merged with newer ones) if the flush fails."""
        with self._lock:
            batch, self._pending = self._pending, {}
        try:
            yield batch
        except BaseException:
            with self._lock:
                for session_id, high in batch.items():
                    self._pending[session_id] = max(self._pending.get(session_id, -1), high)
            raise
