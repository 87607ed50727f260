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
  (``store_lanes.py``). On a loop that runs the turns' work in slices the groups run on
  the loop's own thread when the file is free at once, the lane taking the rest
  (``loop_writes.py``);
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
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal, ParamSpec, TypeVar, assert_never, cast

from dbos._dbos import _get_dbos_instance

from eve.sessions.after_answer import answered_already
from eve.sessions.database_errors import failing_fast
from eve.sessions.loop_writes import LoopWrites, SlicedLoop
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


class LanedExecutor(ThreadPoolExecutor):
    """``background`` for the turns' work, a pool of its own for requests'."""

    def __init__(
        self,
        background: ThreadPoolExecutor,
        *,
        requests: int = REQUEST_THREADS,
        replaced: ThreadPoolExecutor | None = None,
        loop: SlicedLoop | None = None,
    ) -> None:
        # submit() is overridden, so this pool itself never starts a thread
        super().__init__(max_workers=1)
        self.background = background
        #: the executor this one replaced (DBOS's, which its background loop keeps using)
        self.replaced = replaced
        self.requests = ThreadPoolExecutor(max_workers=requests, thread_name_prefix="eve-request")
        self.reads = ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="eve-read")
        self.pooled = ThreadPoolExecutor(max_workers=BACKGROUND_POOL, thread_name_prefix="eve-pg")
        self.writes = WriterLane()
        #: on a loop that runs the turns' work in slices (SQLite's ``ServingLoop``), the
        #: turns' groupable writes made on its thread run there when the file is free
        #: (``loop_writes.py``); None: all in the writer lane
        self.loop_writes = None if loop is None else LoopWrites(self.writes, loop)

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        # called on the loop's thread in the caller's context (``asyncio.to_thread`` copies
        # that context into the thread too): a request's call is known here already
        urgent = failing_fast() and not answered_already()
        if urgent:
            # a request's reads pass the gate, and its writes go first there
            return self.requests.submit(fn, *args, **kwargs)
        found = store_call(fn)
        if found is None:
            return self.background.submit(fn, *args, **kwargs)
        kind, store = found
        match kind:
            case "pooled":
                return self.pooled.submit(fn, *args, **kwargs)
            case "read":
                return self.reads.submit(fn, *args, **kwargs)
            case "write":
                call = functools.partial(fn, *args, **kwargs)
                if self.loop_writes is not None and self.loop_writes.here:
                    return self.loop_writes.write(call, joins=store)
                return self.writes.write(call, joins=store)
            case "alone":
                if self.loop_writes is not None and self.loop_writes.here:
                    # (after the writes queued on the loop's side before it)
                    return self.loop_writes.alone(functools.partial(fn, *args, **kwargs))
                return self.writes.submit(fn, *args, **kwargs)
            case unreachable:
                assert_never(unreachable)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.requests.shutdown(wait=wait, cancel_futures=cancel_futures)
        self.reads.shutdown(wait=wait, cancel_futures=cancel_futures)
        self.pooled.shutdown(wait=wait, cancel_futures=cancel_futures)
        if self.loop_writes is not None:
            self.loop_writes.close()  # what it queued to the lane, before the lane stops
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


def lane_requests(*, loop_writes: bool = False) -> None:
    """Give the launched DBOS the lanes as its executor: DBOS makes whatever its executor
    is the loop's default at its next async call. (DBOS internals, pinned by ``dbos<4``;
    its ``destroy`` shuts them all down.) ``loop_writes``: the turns' groupable writes on
    the running loop's thread when it is a ``ServingLoop`` (``loop_writes.py``). Called on
    that thread."""
    dbos = _get_dbos_instance()
    executor = dbos._executor_field
    assert executor is not None, "DBOS is launched"
    if not isinstance(executor, LanedExecutor):
        turns = ThreadPoolExecutor(max_workers=TURN_THREADS, thread_name_prefix="eve-turn")
        loop = sliced_loop() if loop_writes else None
        dbos._executor_field = LanedExecutor(turns, replaced=executor, loop=loop)


def sliced_loop() -> SlicedLoop | None:
    """The running loop if it runs the turns' work in slices (a ``ServingLoop``: its pauses
    between them are where writes the file was not free for try again); else None."""
    loop = asyncio.get_running_loop()
    if getattr(loop, "requests_first", False) and hasattr(loop, "poll_between_slices"):
        return cast("SlicedLoop", loop)
    return None
