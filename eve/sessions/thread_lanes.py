"""The worker's threads: lanes, so a request's calls never queue behind the turns' work,
and the turns' calls to the store never wait at the SQLite gate in a thread.

Every ``asyncio.to_thread`` in a worker (a store call, a durable step's record, a sync
tool) runs on the executor DBOS makes the loop's default, and this one sorts them as they
are submitted, on the loop's thread:

- a request's calls (``fail_fast``: an HTTP request is being answered) take 32 threads
  of their own, as they go first at the SQLite gate (``sqlite_gate.py``); what a request
  leaves behind once answered (starting its turn, ``after_answer``) is the turns' work;
- on SQLite, the turns' writes to eve's store queue on the loop's side for one thread
  (``writer_lane.py``), which commits the ones queued together in one transaction: SQLite
  has one writer, so they ran one at a time anyway, each in a thread asleep at the gate
  meanwhile; their reads take four threads. A store method says which it is
  (``store_lanes.py``);
- on PostgreSQL, the turns' calls to the store take as many threads as the store's pool
  has connections (``pg_pools.BACKGROUND_POOL``): a call waits for a connection as an item
  in a queue rather than as a thread asleep in the pool, which woke to take its turn at
  the interpreter's lock;
- the rest (DBOS's calls, sync tools) runs on 64 threads. Bounded while the store's calls
  shared it, that pool halved a worker's turns per second at N=500 (a thread asleep at
  the gate held its slot, and calls that needed no gate waited for one), so it was
  DBOS's unbounded one. Now few of its calls wait at a gate (DBOS's writes, for at most
  0.2 s, ``sqlite.py``), and a parked turn holds no thread (it waits in DBOS's async
  ``recv``). A sync tool that blocks for long holds one of the 64 while it does.

At 1,000 live sessions on SQLite a worker ran 1,450 to 1,650 threads and 19 to 36 turns/s
(20 to 26 ms of CPU a turn); with these lanes it runs 111 threads and 49 turns/s, at 15 ms
a turn (``bench/scale.py``, medians of runs on a shared, loaded machine). Most of the gain
is the bound: the same lanes over an unbounded pool ran 250 to 510 threads and 34 to 36
turns/s, the many threads taking turns at the interpreter's lock with the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any, Literal, ParamSpec, TypeVar, assert_never
from weakref import WeakKeyDictionary

from dbos._dbos import _get_dbos_instance

from eve.sessions.database_errors import failing_fast
from eve.sessions.lane_pool import LanePool
from eve.sessions.loop_replies import Answers, Reply
from eve.sessions.pg_pools import BACKGROUND_POOL
from eve.sessions.store import SessionStore
from eve.sessions.store_lanes import Lane, lane_of
from eve.sessions.writer_lane import WriterLane

P = ParamSpec("P")
T = TypeVar("T")

#: threads for requests' calls: short, but one may wait for a locked file until it fails
REQUEST_THREADS = 32
#: threads for the turns' reads of the store on SQLite: they pass the gate one at a time
READ_THREADS = 4
#: threads for the rest of the turns' work (DBOS's calls, sync tools), once the store's
#: calls have lanes of their own
TURN_THREADS = 64


_AFTER_ANSWER: ContextVar[bool] = ContextVar("eve_after_answer", default=False)
#: the lanes serving each loop's ``in_thread`` calls
_SERVED: WeakKeyDictionary[asyncio.AbstractEventLoop, LanedExecutor] = WeakKeyDictionary()


def for_a_request() -> bool:
    """Whether a call made now, on the loop's thread, serves a request being answered (it
    takes the requests' lane)."""
    return failing_fast() and not _AFTER_ANSWER.get()


def served(loop: asyncio.AbstractEventLoop) -> LanedExecutor | None:
    """The lanes that take ``in_thread``'s calls on ``loop``, if any (``serve``)."""
    return _SERVED.get(loop)


@contextlib.contextmanager
def after_answer() -> Iterator[None]:
    """Around work a request left behind once answered (starting its turn): it keeps the
    request's fail-fast rules, but runs on the turns' pool: the requests' lane is for what
    an answer waits on."""
    token = _AFTER_ANSWER.set(True)
    try:
        yield
    finally:
        _AFTER_ANSWER.reset(token)


class LanedExecutor(ThreadPoolExecutor):
    """``background`` for the turns' work, a pool of its own for requests'."""

    def __init__(
        self,
        background: LanePool,
        *,
        requests: int = REQUEST_THREADS,
        replaced: ThreadPoolExecutor | None = None,
    ) -> None:
        # submit() is overridden, so this pool itself never starts a thread
        super().__init__(max_workers=1)
        self.background = background
        #: the executor this one replaced (DBOS's, which its background loop keeps using)
        self.replaced = replaced
        self.requests = ThreadPoolExecutor(max_workers=requests, thread_name_prefix="eve-request")
        self.reads = LanePool(max_workers=READ_THREADS, thread_name_prefix="eve-read")
        self.pooled = LanePool(max_workers=BACKGROUND_POOL, thread_name_prefix="eve-pg")
        self.writes = WriterLane()
        #: where the answers of ``in_thread``'s calls go (``serve``); None: served none
        self.answers: Answers | None = None

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        # called on the loop's thread in the caller's context (``asyncio.to_thread`` copies
        # that context into the thread too): a request's call is known here already
        if for_a_request():
            # a request's reads pass the gate, and its writes go first there
            return self.requests.submit(fn, *args, **kwargs)
        future: Future[T] = Future()
        self.answer(future, fn, functools.partial(fn, *args, **kwargs) if args or kwargs else fn)
        return future

    def answer(self, reply: Reply, fn: Callable[..., Any], call: Callable[[], Any]) -> None:
        """Run ``call`` (``fn`` with its arguments) in the turns' lane for ``fn``, and
        settle ``reply`` with how it ended (not for a request's call: ``submit`` it)."""
        found = store_call(fn)
        if found is None:
            self.background.answer(reply, call)
            return
        kind, store = found
        match kind:
            case "pooled":
                self.pooled.answer(reply, call)
            case "read":
                self.reads.answer(reply, call)
            case "write":
                self.writes.answer(reply, call, joins=store)
            case "alone":
                self.writes.answer(reply, call, joins=None)
            case unreachable:
                assert_never(unreachable)

    def serve(self, loop: asyncio.AbstractEventLoop) -> None:
        """Take the calls ``lane_calls.in_thread`` makes on ``loop`` (their answers settled
        through it, ``loop_replies.py``) until this shuts down."""
        self.answers = Answers(loop)
        _SERVED[loop] = self

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self.answers is not None and _SERVED.get(self.answers.loop) is self:
            del _SERVED[self.answers.loop]  # its loop's calls go back to ``to_thread``
        self.requests.shutdown(wait=wait, cancel_futures=cancel_futures)
        self.reads.shutdown(wait=wait, cancel_futures=cancel_futures)
        self.pooled.shutdown(wait=wait, cancel_futures=cancel_futures)
        self.writes.shutdown(wait=wait, cancel_futures=cancel_futures)
        self.background.shutdown(wait=wait, cancel_futures=cancel_futures)
        if self.replaced is not None:
            self.replaced.shutdown(wait=wait, cancel_futures=cancel_futures)
        super().shutdown(wait=wait, cancel_futures=cancel_futures)


def store_call(fn: Callable[..., Any]) -> tuple[Lane | Literal["pooled"], SessionStore] | None:
    """The lane of ``fn``'s method and its store when ``fn`` is a call of a store's method
    (as ``asyncio.to_thread`` wraps it: a ``partial`` of its context's ``run``, maybe around
    a ``partial`` of the method): on SQLite the lane the method declared (``store_lanes.py``;
    one that declared none runs alone in the writer's), on PostgreSQL ``"pooled"``; None for
    anything else."""
    seen: Any = fn
    for _ in range(3):  # a context's run, a partial of the method: no deeper
        if not isinstance(seen, functools.partial):
            break
        ran_in = getattr(seen.func, "__self__", None)
        if isinstance(ran_in, contextvars.Context):
            seen = seen.args[0] if seen.args else None
        else:
            seen = seen.func
    store = getattr(seen, "__self__", None)
    if not isinstance(store, SessionStore):
        return None
    if store.gate is None:
        return "pooled", store
    return lane_of(seen) or "alone", store


def lane_requests() -> None:
    """Give the launched DBOS the lanes as its executor: DBOS makes whatever its executor
    is the loop's default at its next async call; and eve's own calls on the running loop
    (``lane_calls.in_thread``) take them without that executor. (DBOS internals, pinned by
    ``dbos<4``; its ``destroy`` shuts them all down.)"""
    dbos = _get_dbos_instance()
    executor = dbos._executor_field
    assert executor is not None, "DBOS is launched"
    if not isinstance(executor, LanedExecutor):
        turns = LanePool(max_workers=TURN_THREADS, thread_name_prefix="eve-turn")
        executor = dbos._executor_field = LanedExecutor(turns, replaced=executor)
    executor.serve(asyncio.get_running_loop())
