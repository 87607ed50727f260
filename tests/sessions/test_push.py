"""Followers are pushed what is written: no store read while idle, one shared reader per
session however many follow it, and other processes' commits heard (the SQLite change
check, PostgreSQL LISTEN/NOTIFY, which recovers from a lost connection)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from eve.events import MessageAppendedData, SessionEvent
from eve.execution.events import EventEmitter
from eve.sessions import event_log
from eve.sessions.event_log import EventLog, Pending
from eve.sessions.pg_listener import PgListener
from eve.sessions.sqlite_changes import SqliteChanges
from eve.sessions.store import SessionStore
from tests.postgres import PostgresServer

SESSION = "ses_push"
#: far past anything these tests wait for, so no wait here ends by its timeout
PATIENCE = 20.0


async def events(n: int, start: int = 0) -> list[SessionEvent]:
    made: list[SessionEvent] = []
    emitter = EventEmitter(made.append, session_id=SESSION)
    for i in range(start, start + n):
        await emitter.emit(
            MessageAppendedData(turn_id="turn_0", step_index=0, message_delta=str(i))
        )
    return made


async def write(log: EventLog, n: int, start: int = 0, session: str = SESSION) -> None:
    writer = log.writer(session)
    for event in await events(n, start):
        writer.add(Pending(event=event))
    await writer.flush()
    log.forget(session)


class Follower:
    """A follower of the session from ``start``: what it got, as ``message_delta`` values."""

    def __init__(self, log: EventLog, start: int = 0, session: str = SESSION) -> None:
        self.got: list[str] = []
        self.arrived = asyncio.Event()
        self.stream: AsyncIterator[str] = log.read(session, start, follow=True)
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for payload in self.stream:
            if payload:
                self.got.append(json.loads(payload)["data"]["message_delta"])
                self.arrived.set()

    async def until(self, n: int) -> list[str]:
        async def enough() -> None:
            while len(self.got) < n:
                self.arrived.clear()
                await self.arrived.wait()

        await asyncio.wait_for(enough(), PATIENCE)
        return self.got

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def waiting(log: EventLog, followers: int) -> None:
    """Until ``followers`` follow the session and the feed waits for its next index."""

    async def ready() -> None:
        feed = log.feeds.feeds.get(SESSION)
        while feed is None or feed.waiting < followers:
            await asyncio.sleep(0.005)
            feed = log.feeds.feeds.get(SESSION)

    await asyncio.wait_for(ready(), PATIENCE)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    made = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    made.create_session(SESSION)
    yield made
    made.close()


async def test_an_idle_follower_reads_nothing_and_gets_a_write_at_once(
    store: SessionStore,
) -> None:
    log = EventLog(store)
    await write(log, 2)
    follower = Follower(log)
    assert await follower.until(2) == ["0", "1"]
    await waiting(log, 1)
    reads = log.catch_up_reads
    # longer than the 0.2 s the followers used to poll at: still no read
    await asyncio.sleep(0.5)
    assert (log.catch_up_reads, log.feeds.shared_reads) == (reads, 0)
    await write(log, 1, start=2)
    assert await follower.until(3) == ["0", "1", "2"]
    # the commit was published with its payloads by this worker's writer: nothing read
    assert (log.catch_up_reads, log.feeds.shared_reads) == (reads, 0)
    await follower.stop()
    assert log.feeds.feeds == {}


async def test_a_hundred_followers_share_one_reader(store: SessionStore, tmp_path: Path) -> None:
    log = EventLog(store)
    followers = [Follower(log) for _ in range(100)]
    await waiting(log, 100)
    assert log.catch_up_reads == 100  # each from its own start index, once
    other = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")  # as another process would
    try:
        await write(EventLog(other), 3)
    finally:
        other.close()
    # what a source hears of another process's commit: the new highest index alone
    log.feeds.published(SESSION, 2)
    for follower in followers:
        assert await follower.until(3) == ["0", "1", "2"]
    assert log.catch_up_reads == 100
    assert log.feeds.shared_reads == 1
    for follower in followers:
        await follower.stop()


async def test_this_workers_own_write_reaches_a_hundred_followers_unread(
    store: SessionStore,
) -> None:
    log = EventLog(store)
    followers = [Follower(log) for _ in range(100)]
    await waiting(log, 100)
    await write(log, 3)
    for follower in followers:
        assert await follower.until(3) == ["0", "1", "2"]
    # the writer handed the feed the payloads it committed: no read at all
    assert (log.catch_up_reads, log.feeds.shared_reads) == (100, 0)
    for follower in followers:
        await follower.stop()


async def test_a_follower_behind_the_feed_catches_up_itself(store: SessionStore) -> None:
    log = EventLog(store)
    first = Follower(log)
    await waiting(log, 1)
    await write(log, 3)
    assert await first.until(3) == ["0", "1", "2"]
    # a second follower from index 1 is served what the feed keeps, without a store read
    late = Follower(log, start=1)
    assert await late.until(2) == ["1", "2"]
    await write(log, 1, start=3)
    assert await late.until(3) == ["1", "2", "3"]
    assert await first.until(4) == ["0", "1", "2", "3"]
    await first.stop()
    await late.stop()


async def test_idle_followers_heartbeats_share_one_query_that_finds_an_unheard_write(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(event_log, "HEARTBEAT_SECONDS", 0.2)
    sessions = [f"ses_idle_{i}" for i in range(20)]
    for session in sessions:
        store.create_session(session)
    log = EventLog(store)
    followers = [Follower(log, session=session) for session in sessions]
    await _until(
        lambda: log.heartbeat_rechecks >= len(sessions) and log.feeds.heartbeat_queries >= 1
    )
    # the sessions' heartbeats came together: their question was one query (a few, on a
    # slow machine), and as no log grew, nothing was read
    assert log.feeds.heartbeat_queries < len(sessions) // 2
    assert log.feeds.shared_reads == 0
    other = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")  # as another process would
    try:
        # written where no source tells this worker (no change check runs here)
        await write(EventLog(other), 2, session=sessions[7])
    finally:
        other.close()
    assert await followers[7].until(2) == ["0", "1"]
    assert log.feeds.shared_reads == 1  # the one log that grew, read once
    for follower in followers:
        await follower.stop()


async def test_another_process_writing_the_sqlite_file_reaches_a_follower(
    store: SessionStore, tmp_path: Path
) -> None:
    log = EventLog(store)
    changes = SqliteChanges(store, log.feeds)
    await changes.start()
    other = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")  # as another process would
    try:
        await asyncio.sleep(0.3)
        assert changes.checks == 0  # nothing is followed: nothing is checked
        follower = Follower(log)
        await waiting(log, 1)
        await write(EventLog(other), 2)
        assert await follower.until(2) == ["0", "1"]
        assert log.heartbeat_rechecks == 0  # found by the change check
        await follower.stop()
    finally:
        await changes.stop()
        other.close()


@dataclass
class TwoWorkers:
    """Two workers' stores on one PostgreSQL database: ``log`` follows with a listener,
    ``there`` writes."""

    log: EventLog
    listener: PgListener
    there: SessionStore


@asynccontextmanager
async def two_workers(url: str) -> AsyncIterator[TwoWorkers]:
    sqlalchemy_url = "postgresql+psycopg://" + url.split("://", 1)[1]
    here, there = SessionStore(sqlalchemy_url), SessionStore(sqlalchemy_url)
    here.create_session(SESSION)
    log = EventLog(here)
    listener = PgListener(here.engine, log.feeds)
    await listener.start()
    try:
        yield TwoWorkers(log=log, listener=listener, there=there)
    finally:
        await listener.stop()
        here.close()
        there.close()


async def test_a_notify_reaches_a_follower_on_another_worker(postgres_url: str) -> None:
    async with two_workers(postgres_url) as workers:
        log = workers.log
        follower = Follower(log)
        await waiting(log, 1)
        await _until(lambda: workers.listener.connects == 1)
        await write(EventLog(workers.there), 2)  # the other worker's writer
        assert await follower.until(2) == ["0", "1"]
        # read on the notification, not at the heartbeat's re-read
        feed = log.feeds.feeds[SESSION]
        assert feed.high == 1 and log.heartbeat_rechecks == 0
        await follower.stop()


async def test_a_lost_listen_connection_recovers_without_losing_events(
    postgres_url: str, postgres_server: PostgresServer
) -> None:
    async with two_workers(postgres_url) as workers:
        follower = Follower(workers.log)
        await waiting(workers.log, 1)
        await _until(lambda: workers.listener.connects == 1)
        other = EventLog(workers.there)
        await write(other, 1)
        assert await follower.until(1) == ["0"]
        # every connection to the database ends (the listener's among them); events are
        # written while it is away, and arrive once it is back
        postgres_server.terminate_backends(postgres_url)
        await write(other, 2, start=1)
        assert await follower.until(3) == ["0", "1", "2"]
        assert workers.listener.connects >= 2
        await write(other, 1, start=3)
        assert await follower.until(4) == ["0", "1", "2", "3"]
        await follower.stop()


async def _until(condition: object) -> None:
    assert callable(condition)

    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), PATIENCE)
