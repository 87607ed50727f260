"""The append-only event log of every session: dense indexes, durable writes, followers.

Events reach the database in batches, in order, through one writer per session in this
process. Readers only ever see written events, so an index a reader has seen is never
reassigned, and a reader that reconnects with its last index sees no gap and no duplicate.
A follower is pushed what is written, never polls: each batch's commit is published to the
session's feed (``event_feed.py``), whose one reader fans the new events out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import msgspec
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve._redact import redact_all
from eve.events import EventMeta, SessionEvent
from eve.sessions.database_errors import fail_fast
from eve.sessions.db_retry import waits_out
from eve.sessions.event_feed import EventFeeds, SessionFeed
from eve.sessions.store import EventRow, SessionStore

_encoder = msgspec.json.Encoder()
T = TypeVar("T")

log = logging.getLogger("eve.sessions")

#: how long the writer lets events gather before a write; far below what a reader notices
COALESCE_SECONDS = 0.01
#: a bare newline goes to an idle follower this often, so proxies keep the stream open
HEARTBEAT_SECONDS = 10.0


@dataclass(frozen=True, kw_only=True)
class Pending:
    event: SessionEvent
    workflow_id: str | None = None
    body_seq: int | None = None
    step_key: str | None = None
    attempt: int | None = None


@dataclass(kw_only=True)
class Rider:
    """A write that must be durable with the events before it (``SessionWriter.attach``)."""

    work: Callable[[Connection], Any]
    #: the body it belongs to: dropped with its events (``discard``)
    workflow_id: str
    done: asyncio.Future[Any]


@dataclass(kw_only=True)
class SessionWriter:
    """Writes one session's events in order; ``flush`` waits until all are written.

    A rider (``attach``) goes in the transaction of the next batch, after its events: a
    turn's end saves its checkpoint and ends its place with its last events, in one commit
    where it took three.
    """

    store: SessionStore
    session_id: str
    #: told the session's new highest index after each commit, with the events written
    #: (``EventFeeds.published``: a follower gets them without reading them back)
    on_written: Callable[[str, int, list[str]], None]
    next_index: int | None = None
    pending: list[Pending] = field(default_factory=list)
    riders: list[Rider] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    def add(self, item: Pending) -> None:
        self.pending.append(item)
        if self.task is None or self.task.done():
            self._start()

    def attach(self, work: Callable[[Connection], Any], *, workflow_id: str) -> asyncio.Future[Any]:
        """Run ``work`` in the transaction that writes the events added from now on (the
        next batch; with none, in one of its own); its result, once that commits. Events
        added before may commit earlier, never later."""
        rider = Rider(
            work=work, workflow_id=workflow_id, done=asyncio.get_running_loop().create_future()
        )
        self.riders.append(rider)
        if self.task is None or self.task.done():
            self._start()
        return rider.done

    async def durable(self, work: Callable[[Connection], T], *, workflow_id: str) -> T:
        """``attach``, waited for: ``work``'s result once its transaction commits."""
        return await self.committed(self.attach(work, workflow_id=workflow_id))

    async def committed(self, done: asyncio.Future[T]) -> T:
        """The result of a rider (``done``, as ``attach`` returned it) once its transaction
        commits (a step's record rides with the step's events: a commit and a thread hop
        fewer a step).

        Only its own commit is waited for, not the events other steps go on adding
        meanwhile (``flush`` would: the calls of a batch run at once). A drain that fails
        is started again as ``flush`` starts it, and its error raised or waited out alike.
        """
        while not done.done():
            if self.task is None or self.task.done():
                self._start()  # a failed drain's batch, this rider in it
            task = self.task
            assert task is not None
            await asyncio.wait((done, task), return_when=asyncio.FIRST_COMPLETED)
            if not done.done() and task.done() and self._gives_up(task.exception()):
                raise cast(BaseException, task.exception())
        return done.result()

    async def flush(self) -> None:
        while True:
            if (self.pending or self.riders) and (self.task is None or self.task.done()):
                self._start()  # what a failed drain kept
            if self.task is None:
                return
            try:
                # the drain task keeps going while events arrive: when it ends all are written.
                # Shielded: a body cancelled while it waits (a worker stopping) must not
                # cancel the session's one writer, which others (the stop's drain) wait on
                await asyncio.shield(self.task)
                return
            except Exception as error:
                if self._gives_up(error):
                    raise

    def _gives_up(self, error: BaseException | None) -> bool:
        """Whether a drain's ``error`` ends the wait for it: a drain started outside a body
        gave up; a body's wait goes on (``db_retry``)."""
        return error is not None and (self.store.closed or not waits_out(error))

    def _start(self) -> None:
        if self.task is not None and self.task.done() and not self.task.cancelled():
            # a failed drain's error, seen here: its batch is kept and this drain writes it
            self.task.exception()
        self.task = asyncio.create_task(self._drain())
        # whoever flushes sees a failure too, but no one may: then it is logged here,
        # not left to asyncio's "Task exception was never retrieved" and its traceback
        self.task.add_done_callback(self._report)

    def _report(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        if (error := task.exception()) is not None:
            log.warning(
                "events of session %s not written: %s", self.session_id, type(error).__name__
            )
        elif self.task is task:
            # a drain that wrote all is forgotten (None reads as done): its task keeps the
            # context of the turn that started it, whose event emitter leads back to this
            # writer, a cycle only a full collection would free (issue 31). A failed or
            # cancelled one stays: the next drain and ``flush`` look at it
            self.task = None

    async def _drain(self) -> None:
        while self.pending or self.riders:
            # events come in bursts (a step's start, its calls' results, its end): gather a
            # burst into one transaction rather than writing each as it comes
            await asyncio.sleep(COALESCE_SECONDS)
            batch, self.pending = self.pending, []
            riders, self.riders = self.riders, []
            try:
                written, results = await self._write(batch, riders)
            except BaseException:
                # kept, ahead of what came since: nothing after it may reach the log first
                # (a replay skips what follows a gap), and the next drain writes it
                self.pending[:0] = batch
                self.riders[:0] = riders
                raise
            for rider, result in zip(riders, results, strict=True):
                if not rider.done.done():
                    rider.done.set_result(result)
            if batch:
                assert self.next_index is not None  # _write set it
                self.on_written(self.session_id, self.next_index - 1, written)

    def discard(self, workflow_id: str) -> None:
        """Drop the unwritten events (and riders) of a body that ended with an error: its
        rerun or replay emits them again from the durable record, in their place."""
        if self.task is None or self.task.done():
            self.pending = [item for item in self.pending if item.workflow_id != workflow_id]
            dropped = [rider for rider in self.riders if rider.workflow_id == workflow_id]
            self.riders = [rider for rider in self.riders if rider.workflow_id != workflow_id]
            for rider in dropped:
                rider.done.cancel()

    async def _write(
        self, batch: list[Pending], riders: list[Rider]
    ) -> tuple[list[str], list[Any]]:
        """Append ``batch`` with ``riders``; the payloads as they were stored, and what the
        riders returned."""
        also = [rider.work for rider in riders]
        if not batch:
            return [], await self._alone(also)
        for _ in range(5):
            if self.next_index is None:
                self.next_index = await asyncio.to_thread(
                    self.store.next_event_index, self.session_id
                )
            rows = self._rows_of(batch, self.next_index)
            try:
                results = await asyncio.to_thread(
                    self.store.append_events, self.session_id, self.next_index, rows, also
                )
            except sa.exc.IntegrityError:
                if await self._landed(batch[0], self.next_index):
                    # a commit whose answer was lost (the database restarted as it
                    # answered), and the retry found its own rows: written once. The
                    # riders' results went with the answer: they run again (each may)
                    self.next_index += len(batch)
                    return [row.payload for row in rows], await self._alone(also)
                # another process wrote this session meanwhile (a worker presumed dead)
                self.next_index = None
                continue
            self.next_index += len(batch)
            return [row.payload for row in rows], results
        raise RuntimeError(f"could not append events to session {self.session_id}")

    async def _alone(self, also: list[Callable[[Connection], Any]]) -> list[Any]:
        """Riders with no events to go with: a transaction of their own."""
        return await asyncio.to_thread(self.store.append_events, self.session_id, 0, [], also)

    async def _landed(self, first: Pending, index: int) -> bool:
        found = await asyncio.to_thread(self.store.event_id_at, self.session_id, index)
        return found == first.event.meta.id

    def _rows_of(self, batch: list[Pending], first: int) -> list[EventRow]:
        """``batch`` as rows from index ``first`` on, their payloads redacted together."""
        payloads = redact_all([_encoded(item, first + i) for i, item in enumerate(batch)])
        return [
            EventRow(
                workflow_id=item.workflow_id,
                body_seq=item.body_seq,
                step_key=item.step_key,
                attempt=item.attempt,
                payload=payload,
            )
            for item, payload in zip(batch, payloads, strict=True)
        ]


def _encoded(item: Pending, index: int) -> str:
    meta = EventMeta(id=item.event.meta.id, at=item.event.meta.at, index=index)
    return _encoder.encode(msgspec.structs.replace(item.event, meta=meta)).decode()


class EventLog:
    """All sessions' logs as this process sees them."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._writers: dict[str, SessionWriter] = {}
        #: the followed sessions' feeds; sources of other workers' commits publish here too
        self.feeds = EventFeeds(store)
        #: the store reads followers made themselves, to catch up (an idle one makes none)
        self.catch_up_reads = 0
        #: heartbeats that asked whether a log grew unheard, the safety net under the
        #: notifications (``EventFeeds.heartbeat``)
        self.heartbeat_rechecks = 0

    async def drain(self) -> None:
        """Write every event still pending (at shutdown: none is lost, no task is left)."""
        for writer in list(self._writers.values()):
            # one session's failure must not keep the rest unwritten; its writer's task
            # has said it already (SessionWriter._report), once
            with contextlib.suppress(Exception):
                await writer.flush()

    def writer(self, session_id: str) -> SessionWriter:
        writer = self._writers.get(session_id)
        if writer is None:
            writer = SessionWriter(
                store=self.store, session_id=session_id, on_written=self.feeds.published
            )
            self._writers[session_id] = writer
        return writer

    def forget(self, session_id: str) -> None:
        """Drop the cached writer once a turn ends (another worker may write next)."""
        writer = self._writers.get(session_id)
        if (
            writer is not None
            and not writer.pending
            and not writer.riders
            and (writer.task is None or writer.task.done())
        ):
            del self._writers[session_id]

    def discard(self, session_id: str, workflow_id: str) -> None:
        """``SessionWriter.discard`` on the session's writer, if it has one."""
        if (writer := self._writers.get(session_id)) is not None:
            writer.discard(workflow_id)

    def _rows(self, session_id: str, index: int, fast: bool) -> list[str]:
        # the flag is set in the reading thread's own context: a generator's context
        # changes between its steps, so a flag held across a yield could not be reset
        if not fast:
            return self.store.read_events(session_id, index)
        with fail_fast():
            return self.store.read_events(session_id, index)

    async def read(
        self, session_id: str, start: int, *, follow: bool, fast: bool = False
    ) -> AsyncIterator[str]:
        """Encoded events from ``start`` on; with ``follow``, then new ones until closed.

        While following and idle, yields ``""`` every ``HEARTBEAT_SECONDS``. ``fast``: a
        read does not wait out a database fault (``db_retry``) but raises it (an HTTP
        stream, which ends whole and is followed again from its next index).
        """
        batches = self.batches(session_id, start, follow=follow, fast=fast)
        async with contextlib.aclosing(batches):
            async for batch in batches:
                if not batch:
                    yield ""
                for payload in batch:
                    yield payload

    async def batches(
        self, session_id: str, start: int, *, follow: bool, fast: bool = False
    ) -> AsyncGenerator[list[str], None]:
        """``read``'s events, those ready together in one list, and ``[]`` for a heartbeat.

        An HTTP stream writes each list as one chunk: the events of one commit cost one
        socket write, not one each (writes were a quarter of a busy server's CPU).
        """
        if not follow:
            index = start
            while rows := await asyncio.to_thread(self._rows, session_id, index, fast):
                yield rows
                index += len(rows)
            return
        feed = self.feeds.join(session_id)
        try:
            async for rows in self._follow(feed, start, fast):
                yield rows
        finally:
            self.feeds.leave(feed)

    async def _follow(self, feed: SessionFeed, start: int, fast: bool) -> AsyncIterator[list[str]]:
        index = start
        caught_up = False
        idle_since = time.monotonic()
        while True:
            # taken before looking: what is published while this looks wakes the wait below
            changed, epoch = feed.changed, feed.epoch
            rows = feed.cached(index) if caught_up else None
            if rows is None:
                # from the start index, or from before what the feed keeps: this one's own
                self.catch_up_reads += 1
                rows = await asyncio.to_thread(self._rows, feed.session_id, index, fast)
                caught_up = not rows
            if rows:
                yield rows
                index += len(rows)
                idle_since = time.monotonic()
                continue
            self.feeds.waiting_at(feed, index)
            left = HEARTBEAT_SECONDS - (time.monotonic() - idle_since)
            feed.waiting += 1
            try:
                # a timeout scope, not wait_for: that wrapped each wait in a task of its own,
                # two more hops of the loop for every follower at every wake
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(left, 0)):
                        await changed.wait()
            finally:
                feed.waiting -= 1
            if fast and feed.failure is not None and feed.failure_epoch > epoch:
                raise feed.failure
            if not changed.is_set():
                idle_since = time.monotonic()
                # a safety net, not the way events come: one query for all idle sessions
                self.heartbeat_rechecks += 1
                self.feeds.heartbeat(feed.session_id)
                yield []
