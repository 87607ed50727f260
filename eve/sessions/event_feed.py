"""Push for the event log's followers: one shared reader per followed session, woken when
the session's events are written, fanning what it reads out to every follower.

A follower used to read the store every 0.2 s whether or not anything was written, so 100
followers of one session made 500 reads a second and an idle server never slept. Now a
follower reads the store itself only to catch up (from its ``startIndex``, or when it fell
behind what the feed keeps), then waits. Whoever learns that a session's log grew tells the
feed its new highest index (``published``): the writer in this process after its commit,
the PostgreSQL listener for another worker's commit (``pg_listener.py``), the SQLite change
check for another process's (``sqlite_changes.py``). The feed's one reader then reads the
new events once and every follower takes them from its tail; what this worker's own writer
committed needs no read at all: the writer hands the feed the payloads it stored. At the
heartbeat a follower asks whether its session's log grew unheard (``heartbeat``): a safety
net, never the way events arrive, and one query for every session asking at once (a
loaded server's idle followers asked a read each, every 10 s, in the queue for SQLite's
one writer's gate).

Everything here runs on the event loop; sources in other threads hand over with
``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.database_errors import fail_fast
from eve.sessions.store import SessionStore
from eve.sessions.tables import events

#: the most events a feed keeps for followers that are a little behind; one further back
#: catches up from the store itself
TAIL_EVENTS = 1000
#: a shared read that failed (the database is away) is tried again after the first, doubled
#: each time up to the second
RETRY_SECONDS = (0.5, 5.0)
#: how long heartbeats gather before their one query of the sessions' highest indexes
HEARTBEAT_GATHER_SECONDS = 0.05
#: the most sessions one such query names
HEARTBEAT_BATCH = 500


@dataclass(kw_only=True)
class SessionFeed:
    """What this worker knows of one followed session's log, and its followers' waits."""

    session_id: str
    #: the highest index known to be written (-1: none known)
    high: int = -1
    #: where the shared reader goes on reading (None: no follower has waited yet)
    next: int | None = None
    #: the events just before ``next``, oldest first; the first is at ``next - len(tail)``
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_EVENTS))
    followers: int = 0
    #: the followers waiting for the next index now (the rest are reading or sending)
    waiting: int = 0
    #: the shared reader's task while it reads
    reading: asyncio.Task[None] | None = None
    #: a re-read was asked for although no index said so (a heartbeat, a reconnect)
    recheck_wanted: bool = False
    #: set and replaced each time the tail grows or a read fails: the followers' wake-up
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    #: how many times the tail grew or a read failed (a follower compares to see which)
    epoch: int = 0
    #: the last failed read, and the epoch it failed in
    failure: Exception | None = None
    failure_epoch: int = -1

    def cached(self, index: int) -> list[str] | None:
        """The kept events from ``index`` on; None if ``index`` is before what is kept."""
        if self.next is None:
            return None
        first = self.next - len(self.tail)
        if index < first:
            return None
        # from the deque's end: a follower wants the few newest of up to TAIL_EVENTS
        newest = list(itertools.islice(reversed(self.tail), self.next - index))
        newest.reverse()
        return newest

    def wake(self) -> None:
        self.epoch += 1
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()


class EventFeeds:
    """The feeds of the sessions this worker's followers follow, and their one reader each."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.feeds: dict[str, SessionFeed] = {}
        #: reads of the store by shared readers (for tests and the benchmark: an idle
        #: follower causes none)
        self.shared_reads = 0
        #: set while any session is followed (the SQLite change check runs only then)
        self.followed = asyncio.Event()
        #: sessions whose followers' heartbeats came, for the next query of their highs
        self._heartbeats: set[str] = set()
        self._asking: asyncio.Task[None] | None = None
        #: queries of highest indexes for heartbeats (for tests and the benchmark)
        self.heartbeat_queries = 0

    def join(self, session_id: str) -> SessionFeed:
        feed = self.feeds.get(session_id)
        if feed is None:
            feed = self.feeds[session_id] = SessionFeed(session_id=session_id)
        feed.followers += 1
        self.followed.set()
        return feed

    def leave(self, feed: SessionFeed) -> None:
        feed.followers -= 1
        if feed.followers == 0 and self.feeds.get(feed.session_id) is feed:
            del self.feeds[feed.session_id]
            if feed.reading is not None:
                feed.reading.cancel()
            if not self.feeds:
                self.followed.clear()
                self._heartbeats.clear()
                if self._asking is not None:
                    self._asking.cancel()  # nobody is left to tell

    def published(self, session_id: str, high: int, written: Sequence[str] = ()) -> None:
        """The session's log holds events up to ``high`` (written and committed);
        ``written``: the payloads just committed, the last at ``high`` (this worker's writer
        knows them, so the feed takes them as they are instead of reading them back)."""
        feed = self.feeds.get(session_id)
        if feed is None:
            return  # nobody here follows it
        first = high - len(written) + 1
        if written and feed.next == first and not _busy(feed.reading):
            # exactly what the feed lacks, and no read that might bring it too
            feed.tail.extend(written)
            feed.next = high + 1
            feed.high = max(feed.high, high)
            feed.wake()
            return
        feed.high = max(feed.high, high)
        self._read_if_behind(feed)

    def recheck(self, session_id: str | None = None) -> None:
        """Read ``session_id``'s log again (every followed one's: a source reconnected and
        may have missed what was written meanwhile)."""
        chosen = self.feeds.values() if session_id is None else [self.feeds.get(session_id)]
        for feed in list(chosen):
            if feed is not None and feed.next is not None:
                feed.recheck_wanted = True
                self._read_if_behind(feed)

    def heartbeat(self, session_id: str) -> None:
        """A follower of ``session_id`` heard nothing for a heartbeat: ask the store whether
        its log grew unheard, with every session asking meanwhile, in one query."""
        self._heartbeats.add(session_id)
        if not _busy(self._asking):
            self._asking = asyncio.create_task(self._ask_highs())

    async def _ask_highs(self) -> None:
        while self._heartbeats:
            await asyncio.sleep(HEARTBEAT_GATHER_SECONDS)
            asked = sorted(self._heartbeats)[:HEARTBEAT_BATCH]
            self._heartbeats.difference_update(asked)
            self.heartbeat_queries += 1
            try:
                highs = await asyncio.to_thread(self._highs, asked)
            except Exception:
                # each session's own re-read, which backs off and tells its followers
                for session_id in asked:
                    self.recheck(session_id)
                continue
            for session_id, high in highs:
                self.published(session_id, high)

    def _highs(self, session_ids: list[str]) -> list[tuple[str, int]]:
        with fail_fast():
            return self.store.run(lambda c: _highs_of(c, session_ids))

    def waiting_at(self, feed: SessionFeed, index: int) -> None:
        """A follower read everything before ``index`` and waits for it."""
        if feed.next is None:
            feed.next = index
        self._read_if_behind(feed)

    def _read_if_behind(self, feed: SessionFeed) -> None:
        if feed.next is None or _busy(feed.reading):
            return  # a running read loops until it has caught up with ``high``
        if feed.high >= feed.next or feed.recheck_wanted:
            feed.reading = asyncio.create_task(self._read(feed))

    async def _read(self, feed: SessionFeed) -> None:
        backoff = RETRY_SECONDS[0]
        while feed.next is not None and (feed.high >= feed.next or feed.recheck_wanted):
            feed.recheck_wanted = False
            start = feed.next
            self.shared_reads += 1
            try:
                rows = await asyncio.to_thread(self._rows, feed.session_id, start)
            except Exception as error:
                # the followers of an HTTP stream end theirs (and reconnect from their next
                # index); the rest wait while this reader tries again, backing off
                feed.failure, feed.failure_epoch = error, feed.epoch + 1
                feed.wake()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_SECONDS[1])
                feed.recheck_wanted = True
                continue
            if not rows:
                return  # a publication ahead of what this connection sees: the next one reads
            feed.tail.extend(rows)
            feed.next = start + len(rows)
            feed.high = max(feed.high, feed.next - 1)
            feed.wake()

    def _rows(self, session_id: str, start: int) -> list[str]:
        # a shared read never waits out a database fault: its followers decide (above)
        with fail_fast():
            return self.store.read_events(session_id, start)


def _highs_of(c: Connection, session_ids: list[str]) -> list[tuple[str, int]]:
    rows = c.execute(
        sa.select(events.c.session_id, sa.func.max(events.c.idx))
        .where(events.c.session_id.in_(session_ids))
        .group_by(events.c.session_id)
    ).all()
    return [(str(session_id), int(high)) for session_id, high in rows]


def _busy(task: asyncio.Task[None] | None) -> bool:
    return task is not None and not task.done()
