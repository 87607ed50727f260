"""The turns' groupable writes on SQLite run on the event loop's thread, in groups, when eve's
file is free at once; everything else stays the writer lane's (``writer_lane.py``).

On SQLite a worker's turns' writes went to one thread, the writer lane, which ran them in
groups of up to ``MOST_WRITES`` in one transaction. At 1,000 live sessions that thread was
busy 85-92 % of the time on 0.2 of a core: it waited, mostly for the interpreter's lock back
after each of SQLite's calls (the driver lets it go around every statement), with eve's file
held meanwhile, while the loop's thread ran 0.53 of a core with hundreds of callbacks
waiting for it. A group's SQL is a fraction of a millisecond of CPU on a file in the page
cache, so the loop runs it itself, as it does a message's claim (``claim_now.py``):

- A write (``write`` lane: ``store_lanes.py``) submitted on the loop's thread queues here, and
  a callback of the turns' work (deferred behind the requests, ``serving_loop.py``) runs the
  writes at the head of the queue as a group (``group_commit.group_on``): the gate taken
  only if no thread holds it and no request waits (``SqliteGate.held_now``), ``BEGIN
  IMMEDIATE`` tried once on a connection of its own (busy handler off), the writes, the
  commit, their futures settled. A request that comes to wait meanwhile (another process's
  claim, through the file's signal) ends the group early, as in the lane; the rest waits for
  the next try.
- The file not free (the gate held by another thread, or the other worker holding the
  file): the writes stay queued and are tried again at each of the loop's pauses between
  two slices (``poll_between_slices``), for ``RETRY_SECONDS``; then the whole queue goes to
  the lane, which waits for the file in its thread, in their order.
- Anything else goes to the lane, never waited out on the loop: a group undone (a write
  raised) or a fault of the file (full, read-only, gone) sends each of its writes to the
  lane alone, where each meets its own outcome and waits out a transient fault
  (``db_retry.retried``) as before; an ``alone`` write (it must not run twice) goes there in
  its turn; so does the queue when the loop will not pause soon (no turns' work waits).
- Order: a write is never overtaken. The queue runs from its head only, and only while the
  lane has nothing queued or running (what it was given came before); else it waits for the
  lane, at the loop's pauses.

Only on a ``ServingLoop`` (its pauses between slices) and on SQLite; ``EVE_LOOP_WRITES=off``
leaves every write to the lane (``settings.py``). A call from another thread goes to the
lane as before.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future
from enum import Enum
from typing import Any, Protocol, TypeVar

from sqlalchemy.engine import Engine

from eve.sessions.group_commit import (
    BUSY,
    MOST_WRITES,
    GroupConnection,
    Joinable,
    group_on,
)
from eve.sessions.sqlite_gate import SqliteGate
from eve.sessions.writer_lane import QueuedWrite, WriterLane, settled, taken_from

T = TypeVar("T")

#: how long the loop waits to try again on a timer when no pause between slices comes
PAUSE_SECONDS = 0.002
#: how long writes the file was not free for are tried again at the loop's pauses before they
#: go to the lane: about a group of the other worker's, as a message's claim waits
#: (``claim_now.RETRY_SECONDS``)
RETRY_SECONDS = 0.025


class SlicedLoop(Protocol):
    """What this needs of a ``ServingLoop`` (``eve/server/serving_loop.py``)."""

    @property
    def pausing(self) -> bool: ...

    def poll_between_slices(self, check: Callable[[], object]) -> Callable[[], None]: ...

    def call_later(self, delay: float, callback: Callable[[], object]) -> object: ...

    def call_soon(
        self, callback: Callable[[], object], *, context: contextvars.Context | None = None
    ) -> object: ...


class Store(Joinable, Protocol):
    closed: bool


class _Next(Enum):
    #: nothing queued, or a group ran: the next callback or pause takes what is left
    DONE = "done"
    #: the file was not free, or the lane is busy: try at the next pause
    WAIT = "wait"


class LoopWrites:
    """The turns' groupable writes of one worker on its loop's thread (made there)."""

    def __init__(
        self,
        lane: WriterLane,
        loop: SlicedLoop,
        *,
        most: int = MOST_WRITES,
        retry: float = RETRY_SECONDS,
    ) -> None:
        self.lane = lane
        self.loop = loop
        self.most = most
        self.retry = retry
        #: the loop's thread: only calls made there queue here
        self.thread = threading.get_ident()
        #: writes committed on the loop, groups by their writes, writes given to the lane
        #: by why, and tries that did not run by why (for tests and the benchmark)
        self.ran = 0
        self.groups: Counter[int] = Counter()
        self.handed: Counter[str] = Counter()
        self.not_now: Counter[str] = Counter()
        self._queued: deque[QueuedWrite] = deque()
        # a shutdown comes from another thread (DBOS's destroy)
        self._lock = threading.Lock()
        self._closed = False
        self._kept: dict[Engine, GroupConnection] = {}
        self._polling: Callable[[], None] | None = None
        self._timer: object | None = None
        self._busy_since: float | None = None
        # the drains' context: no request's, so they wait behind the requests' callbacks
        self._context = contextvars.Context()

    @property
    def here(self) -> bool:
        """Whether a call made now is on the loop's thread (and may queue here)."""
        return threading.get_ident() == self.thread

    def write(self, call: Callable[[], T], *, joins: Store) -> Future[T]:
        """``call`` (of a ``write`` method of ``joins``) in its turn, maybe on the loop in
        one transaction with the writes queued next to it."""
        return self._queue(QueuedWrite(call, Future(), joins))

    def alone(self, call: Callable[[], T]) -> Future[T]:
        """``call`` in its turn, in the lane, after every write queued here before it."""
        return self._queue(QueuedWrite(call, Future(), None))

    def close(self) -> None:
        """Give what is queued to the lane, in order (it runs it, or settles it as it
        settles its own at its shutdown); from then on everything goes there."""
        with self._lock:
            self._closed = True
            left, self._queued = list(self._queued), deque()
        self._hand(left, why="closed")
        for kept in self._kept.values():
            with kept.lock:  # (after a group the loop is running)
                kept.give_up()

    def _queue(self, write: QueuedWrite) -> Future[Any]:
        with self._lock:
            queued = not self._closed
            if queued:
                self._queued.append(write)
        if queued:
            # one drain a write: each write has a try after it, however the ones before went
            self.loop.call_soon(self._drain, context=self._context)
        else:
            self._hand([write], why="closed")
        return write.future

    def _drain(self) -> None:
        if self._step() is _Next.WAIT:
            self._wait()

    def _poll(self) -> None:
        self._step()
        if not self._queued:
            self._stop_polling()
        elif not self.loop.pausing:
            self._wait()  # (a timer: no pause comes)

    def _later(self) -> None:
        self._timer = None
        if self._step() is _Next.WAIT or self._queued:
            self._wait()

    def _wait(self) -> None:
        """Try again at the loop's next pause between slices; while none comes (no turns'
        work waits), after ``PAUSE_SECONDS`` on a timer, which keeps the loop's thread free
        meanwhile."""
        if self.loop.pausing:
            if self._polling is None:
                self._polling = self.loop.poll_between_slices(self._poll)
        elif self._timer is None:
            self._timer = self.loop.call_later(PAUSE_SECONDS, self._later)

    def _stop_polling(self) -> None:
        stop, self._polling = self._polling, None
        if stop is not None:
            stop()

    def _step(self) -> _Next:
        """One group from the head of the queue, if it can run now."""
        with self._lock:
            if not self._queued:
                return _Next.DONE
            if not self.lane.idle:
                self.not_now["lane"] += 1
                return _Next.WAIT  # what it was given came first
            store = self._queued[0].joins
            # it must not run twice, or its store is closed: the lane's, as before
            lanes = store is None or getattr(store, "closed", False)
            taken = [self._queued.popleft()] if lanes else taken_from(self._queued, self.most)
        if store is None or lanes:
            self._hand(taken, why="alone")
            return _Next.WAIT
        return self._run(store, taken) if taken else _Next.DONE

    def _run(self, store: Joinable, taken: list[QueuedWrite]) -> _Next:
        gate = store.gate
        assert gate is not None, "only a SQLite store's writes queue here"
        try:
            with gate.held_now() as free:
                outcomes = (
                    group_on(self._kept_for(store), store, [w.call for w in taken], patience=0.0)
                    if free
                    else BUSY
                )
        except BaseException as error:
            # after its commit: whether the writes are durable is unknown, and running
            # them again could make them twice (as in the lane)
            for write in taken:
                write.future.set_exception(error)
            return _Next.DONE
        if outcomes is BUSY:
            self.not_now[_why_not(gate, free)] += 1
            return self._not_free(taken)
        self._busy_since = None
        if outcomes is None:
            # undone (a write raised) or a fault of the file: each alone, in the lane
            self._hand(taken, why="undone", alone=True)
            return _Next.WAIT
        self.ran += len(outcomes)
        self.groups[len(outcomes)] += 1
        for write, outcome in zip(taken, outcomes, strict=False):
            settled(write, outcome)
        # the rest, when the group ended early for a request
        self._put_back(taken[len(outcomes) :])
        return _Next.DONE

    def _not_free(self, taken: list[QueuedWrite]) -> _Next:
        self._put_back(taken)
        now = time.perf_counter()
        if self._busy_since is None:
            self._busy_since = now
        elif now - self._busy_since >= self.retry:
            self._hand_all(why="waited")
        return _Next.WAIT

    def _put_back(self, writes: list[QueuedWrite]) -> None:
        if not writes:
            return
        with self._lock:
            if not self._closed:
                self._queued.extendleft(reversed(writes))
                return
        self._hand(writes, why="closed")

    def _hand_all(self, *, why: str) -> None:
        self._busy_since = None
        with self._lock:
            left, self._queued = list(self._queued), deque()
        self._hand(left, why=why)

    def _hand(self, writes: list[QueuedWrite], *, why: str, alone: bool = False) -> None:
        if writes:
            self.handed[why] += len(writes)
            self.lane.take_over(writes, alone=alone)

    def _kept_for(self, store: Joinable) -> GroupConnection:
        kept = self._kept.get(store.engine)
        if kept is None:
            kept = self._kept[store.engine] = GroupConnection(store.engine)
        return kept


def _why_not(gate: SqliteGate, free: bool) -> str:
    """Why a group did not run: another process held the file (``file``), a request waits
    for it (``request``), or another thread of this process holds the gate (``gate``)."""
    if free:
        return "file"
    return "request" if gate.requests_waiting else "gate"
