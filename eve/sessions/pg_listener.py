"""Other workers' event commits, heard on PostgreSQL: one ``LISTEN`` connection per worker.

Every commit of events is notified on ``eve_events`` as ``<origin> <session id>:<high
index>`` once it is committed (``pg_notifier.py``), so a notification means the rows are
there; this worker's own (its store's ``origin``) are skipped, its writer told the feeds.
This worker's listener, a thread blocked on its connection (no CPU while nothing comes),
hands each to the event feeds on the loop, coalesced per session.

A notification sent while the connection is down is lost, so when the listener connects
(at start, after a loss) it asks every followed session to read its log again
(``EventFeeds.recheck``): nothing written meanwhile is missed, only read a moment later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any

from sqlalchemy.engine import Engine

from eve.sessions.event_feed import EventFeeds
from eve.sessions.pg_notifier import EVENTS_CHANNEL

log = logging.getLogger("eve.sessions")

#: how long the listening thread blocks before it looks whether it should stop
_WAIT_SECONDS = 1.0
#: the first wait before connecting again after a loss; doubled each failure, up to the last
_RETRY_SECONDS = (0.05, 2.0)


class PgListener:
    """Listens on ``eve_events`` for this worker and publishes to ``feeds``."""

    def __init__(self, engine: Engine, feeds: EventFeeds) -> None:
        self.engine = engine
        self.feeds = feeds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        #: highs heard and not yet handed over, by session
        self._heard: dict[str, int] = {}
        #: the listening connection's server process id while connected (tests end it)
        self.backend_pid: int | None = None
        #: how many times it connected (and so re-read every followed session)
        self.connects = 0
        self._delay = _RETRY_SECONDS[0]
        notifier = feeds.store.notifier
        #: what this worker's own notifications carry (``pg_notifier.py``)
        self._origin = None if notifier is None else notifier.origin

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, name="eve-pg-listener", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except Exception as error:
                if self._stop.is_set():
                    return
                if self._delay == _RETRY_SECONDS[0]:  # once per outage, not per attempt
                    log.warning("event listener lost its connection: %s", type(error).__name__)
                self._stop.wait(self._delay)
                self._delay = min(self._delay * 2, _RETRY_SECONDS[1])

    def _listen(self) -> None:
        raw = self.engine.raw_connection()
        connection: Any = raw.driver_connection
        # a connection of its own, out of the pool: it stays in LISTEN for the process's life
        raw.detach()
        try:
            connection.autocommit = True
            connection.execute(f"LISTEN {EVENTS_CHANNEL}")
            self.backend_pid = connection.info.backend_pid
            self._delay = _RETRY_SECONDS[0]
            self.connects += 1
            if self.connects > 1:
                log.warning("event listener connected again; followed sessions read again")
            self._call(self.feeds.recheck)
            while not self._stop.is_set():
                for notify in connection.notifies(timeout=_WAIT_SECONDS):
                    self._heard_one(notify.payload)
        finally:
            self.backend_pid = None
            with contextlib.suppress(Exception):
                connection.close()

    def _heard_one(self, payload: str) -> None:
        origin, _, heard = payload.partition(" ")
        if origin == self._origin:
            return  # this worker's own commit: its writer told the feeds already
        session_id, _, high = heard.rpartition(":")
        if not session_id or not high.isdigit():
            return
        with self._lock:
            first = not self._heard
            self._heard[session_id] = max(self._heard.get(session_id, -1), int(high))
        if first:
            # one hand-over however many arrive before the loop runs it
            self._call(self._hand_over)

    def _hand_over(self) -> None:
        with self._lock:
            heard, self._heard = self._heard, {}
        for session_id, high in heard.items():
            self.feeds.published(session_id, high)

    def _call(self, callback: Any) -> None:
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # the loop closed: the process is stopping
            self._loop.call_soon_threadsafe(callback)
