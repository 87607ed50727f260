"""One thread for the turns' writes to the store on SQLite, several of them a transaction.

SQLite has one writer at a time, so the store's writes ran one at a time anyway, each in a
thread of its own that waited at the gate (``sqlite_gate.py``): at 1,000 live sessions a
worker ran 1,400 threads, most of them asleep there, and every hand-over woke one that then
waited for the interpreter's lock behind the event loop. Here a write waits for its turn as
an item in a queue, holding no thread, and one thread runs the queue: from one commit to
the next it keeps running, with no thread to wake between them.

When that thread finds several writes queued, it commits them together (group commit,
``group_commit.py``): the writes queued one after another on the same store that declared
themselves ``write`` (``store_lanes.py``), ``MOST_WRITES`` at most, in one transaction; their
callers learn their outcome once it committed. A write found alone, or one that must not run
twice (``alone``), runs as it did: its own transactions. The queue keeps its order: a group
never takes a write from behind another.

The thread still takes the gate for each transaction, so a request's write (on the
requests' threads) goes first, and a write made in any other thread queues there too; a
group commits early for a request that waits there, and its rest runs after the request. A
write that waits out a fault (``db_retry.py``) holds the lane meanwhile: the writes behind
it wait for the same file, and a request's never queues here.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, assert_never

from eve.sessions.group_commit import (
    MOST_WRITES,
    Joinable,
    Outcome,
    Raised,
    Returned,
    run_together,
)

P = ParamSpec("P")
T = TypeVar("T")


def _named(name: str) -> None:
    threading.current_thread().name = name


@dataclass(frozen=True, slots=True)
class QueuedWrite:
    """A call queued for the writer: the lane's, or the event loop's (``loop_writes.py``)."""

    call: Callable[[], Any]
    future: Future[Any]
    #: the store whose other writes this one may share a transaction with; None: alone
    joins: Joinable | None


class WriterLane(ThreadPoolExecutor):
    """The standard library's one-thread executor, its thread named ``name``, running what
    is queued in order, the groupable writes among it together (``write``)."""

    def __init__(self, name: str = "eve-writer", *, most: int = MOST_WRITES) -> None:
        super().__init__(max_workers=1, initializer=_named, initargs=(name,))
        #: writes run (for tests and the benchmark)
        self.ran = 0
        #: transactions by the number of writes they ran together (1: alone)
        self.groups: Counter[int] = Counter()
        self._most = most
        self._queued: deque[QueuedWrite] = deque()
        self._lock = threading.Lock()
        # a drain is on the executor's queue or running: it takes whatever is queued
        self._draining = False
        self._closed = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """``fn`` in its turn, alone."""
        return self._queue(functools.partial(fn, *args, **kwargs), None)

    def write(self, call: Callable[[], T], *, joins: Joinable) -> Future[T]:
        """``call`` (of a ``write`` method of ``joins``) in its turn, maybe in one
        transaction with the writes to the same store queued next to it."""
        return self._queue(call, joins)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            if cancel_futures:
                for write in self._queued:
                    write.future.cancel()
                self._queued.clear()
        super().shutdown(wait=wait, cancel_futures=cancel_futures)

    @property
    def idle(self) -> bool:
        """Nothing queued or running: every write given to it has its outcome (read on
        another thread, maybe a moment late: then it is still busy)."""
        return not self._draining

    def take_over(self, writes: Iterable[QueuedWrite], *, alone: bool = False) -> None:
        """Queue ``writes``, queued elsewhere first (the event loop's: ``loop_writes.py``),
        in their order, each on its own if ``alone``; each one's future gets its outcome,
        or this lane's error if it is shut down."""
        queued = [QueuedWrite(w.call, w.future, None) if alone else w for w in writes]
        with self._lock:
            if not self._closed:
                self._queued.extend(queued)
                self._start()
                return
        closed = RuntimeError("cannot schedule new futures after shutdown")
        for write in queued:
            if not write.future.cancel():
                write.future.set_exception(closed)

    def _queue(self, call: Callable[[], Any], joins: Joinable | None) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._queued.append(QueuedWrite(call, future, joins))
            self._start()
        return future

    def _start(self) -> None:
        # (under the lock)
        if not self._draining:
            self._draining = True
            super().submit(self._drain)

    def _drain(self) -> None:
        while True:
            with self._lock:
                taken = taken_from(self._queued, self._most)
                if not taken:
                    self._draining = False
                    return
            self._run(taken)

    def _run(self, taken: list[QueuedWrite]) -> None:
        self.ran += len(taken)
        while len(taken) > 1 and taken[0].joins is not None:
            try:
                outcomes = run_together(taken[0].joins, [write.call for write in taken])
            except BaseException as error:
                # after its commit: whether the writes are durable is unknown, and running
                # them again could make them twice
                for write in taken:
                    write.future.set_exception(error)
                return
            if outcomes is None:
                break
            self.groups[len(outcomes)] += 1
            for write, outcome in zip(taken, outcomes, strict=False):
                settled(write, outcome)
            # the rest, when the group ended early for a request's write
            taken = taken[len(outcomes) :]
        if taken:
            self.groups[1] += len(taken)
        for write in taken:
            _settle(write)


def taken_from(queued: deque[QueuedWrite], most: int) -> list[QueuedWrite]:
    """The next write of ``queued``, and the groupable writes to its store queued right
    behind it, ``most`` at most, taken off it and marked running; a cancelled one skipped."""
    taken: list[QueuedWrite] = []
    while queued and len(taken) < most:
        following = queued[0]
        if taken and (taken[0].joins is None or following.joins is not taken[0].joins):
            break
        queued.popleft()
        # False: its caller cancelled it before it ran (running: the event loop took it
        # once, and gave it back before it ran: ``loop_writes.py``)
        if following.future.running() or following.future.set_running_or_notify_cancel():
            taken.append(following)
    return taken


def settled(write: QueuedWrite, outcome: Outcome) -> None:
    """``write``'s future given ``outcome``, what its run in a group met."""
    match outcome:
        case Returned(value):
            write.future.set_result(value)
        case Raised(failure):
            write.future.set_exception(failure)
        case unreachable:
            assert_never(unreachable)


def _settle(write: QueuedWrite) -> None:
    try:
        value = write.call()
    except BaseException as error:
        write.future.set_exception(error)
    else:
        write.future.set_result(value)
