"""Another process's event commits on the SQLite file: one cheap check for the whole worker.

SQLite has no notifications between processes, and the file may have another writer (an
``eve dev`` beside an ``eve serve`` on the same app). So while anything is followed, the
worker asks once per ``CHECK_SECONDS`` for the log's highest row id, one lookup at the end
of a b-tree, however many sessions and followers there are; only when it grew does it ask
which sessions the new rows belong to and publish their highest indexes. Row ids grow in
commit order (SQLite has one writer at a time and the log never deletes), so the rows past
the last id seen are exactly what was committed since. Nothing is followed: no query.
"""

from __future__ import annotations

import asyncio
import logging

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.event_feed import EventFeeds
from eve.sessions.store import SessionStore
from eve.sessions.tables import events

log = logging.getLogger("eve.sessions")

#: how often a followed worker looks for another process's commits
CHECK_SECONDS = 0.2

_ROWID: sa.ColumnElement[int] = sa.literal_column("rowid", sa.Integer)


def _last_rowid(c: Connection) -> int:
    return int(c.execute(sa.select(sa.func.max(_ROWID)).select_from(events)).scalar() or 0)


def _grown_since(c: Connection, rowid: int) -> list[tuple[str, int]]:
    rows = c.execute(
        sa.select(events.c.session_id, sa.func.max(events.c.idx))
        .where(rowid < _ROWID)
        .group_by(events.c.session_id)
    ).all()
    return [(str(session_id), int(high)) for session_id, high in rows]


class SqliteChanges:
    """Publishes the commits another process makes to the log, while anything is followed."""

    def __init__(self, store: SessionStore, feeds: EventFeeds) -> None:
        self.store = store
        self.feeds = feeds
        self._task: asyncio.Task[None] | None = None
        #: how many checks ran (for tests: none while nothing is followed)
        self.checks = 0

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            await self.feeds.followed.wait()
            try:
                seen = await asyncio.to_thread(self.store.read, _last_rowid)
            except Exception as error:  # a locked or failing file: look again soon
                log.debug("change check failed: %s", type(error).__name__)
                await asyncio.sleep(CHECK_SECONDS)
                continue
            # what was committed before this baseline, after a follower caught up
            self.feeds.recheck()
            while self.feeds.followed.is_set():
                await asyncio.sleep(CHECK_SECONDS)
                try:
                    seen, grown = await asyncio.to_thread(self._check, seen)
                except Exception as error:  # the next check tries again
                    log.debug("change check failed: %s", type(error).__name__)
                    continue
                for session_id, high in grown:
                    self.feeds.published(session_id, high)

    def _check(self, seen: int) -> tuple[int, list[tuple[str, int]]]:
        self.checks += 1
        return self.store.read(lambda c: _changes_since(c, seen))


def _changes_since(c: Connection, seen: int) -> tuple[int, list[tuple[str, int]]]:
    # one transaction, so one pass through the store's gate for SQLite's one writer
    last = _last_rowid(c)
    return (last, _grown_since(c, seen)) if last > seen else (seen, [])
