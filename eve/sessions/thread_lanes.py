"""The worker's threads: a bounded pool for the work of turns, and a lane of its own for
requests.

Every ``asyncio.to_thread`` in a worker (a store call, a durable step's record, a sync
tool) runs on DBOS's executor, which DBOS makes the loop's default and leaves unbounded
(``runtimeConfig.max_executor_threads``): at 1,000 live sessions a worker ran 1,233
threads, most of them waiting for SQLite's one writer, and every switch between them cost
the interpreter's lock. Bounded, the pool keeps what it cannot run at once in its queue,
first come first served, and a request would wait there behind the turns' work: so a
request's calls (``fail_fast``: an HTTP request is being answered) take a small pool of
their own and never queue behind a turn's, as they go first at the SQLite gate
(``sqlite_gate.py``).

Nothing parked holds a thread: a turn waiting for a person or an event waits in DBOS's
``recv_async`` on the loop, and a sleep in ``asyncio.sleep``. What blocks a thread is a
store call (short, or waiting its turn at the gate, whose holder needs no other thread)
and a sync tool, which runs within a step and so within the compute permits
(``--concurrency``): the pool has ``DATABASE_THREADS`` threads and one per permit up to
``TOOL_THREADS``. Most steps wait on a model, not a thread, so permits in the hundreds
need no more threads than that; sync tools beyond it wait for a thread, in order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

from dbos._dbos import _get_dbos_instance

from eve.sessions.database_errors import failing_fast

P = ParamSpec("P")
T = TypeVar("T")

#: threads for the turns' store calls and DBOS's records (on SQLite one writes at a time)
DATABASE_THREADS = 16
#: the most threads for sync tools, whatever the permits
TOOL_THREADS = 48
#: threads for requests' calls: short, but one may wait for a locked file until it fails
REQUEST_THREADS = 32


_AFTER_ANSWER: ContextVar[bool] = ContextVar("eve_after_answer", default=False)


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

    def __init__(self, background: ThreadPoolExecutor, *, requests: int = REQUEST_THREADS) -> None:
        # submit() is overridden, so this pool itself never starts a thread
        super().__init__(max_workers=1)
        self.background = background
        self.requests = ThreadPoolExecutor(max_workers=requests, thread_name_prefix="eve-request")

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        # called on the loop's thread in the caller's context (``asyncio.to_thread`` copies
        # that context into the thread too): a request's call is known here already
        urgent = failing_fast() and not _AFTER_ANSWER.get()
        lane = self.requests if urgent else self.background
        return lane.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.requests.shutdown(wait=wait, cancel_futures=cancel_futures)
        self.background.shutdown(wait=wait, cancel_futures=cancel_futures)
        super().shutdown(wait=wait, cancel_futures=cancel_futures)


def pool_size(permits: int) -> int:
    """The turns' pool for a worker with ``permits`` compute permits."""
    return DATABASE_THREADS + min(permits, TOOL_THREADS)


def lane_requests() -> None:
    """Give the launched DBOS's executor (bounded at launch by ``max_executor_threads``) a
    lane for requests: DBOS makes whatever its executor is the loop's default at its next
    async call. (DBOS internals, pinned by ``dbos<4``; its ``destroy`` shuts both down.)"""
    dbos = _get_dbos_instance()
    executor = dbos._executor_field
    assert executor is not None, "DBOS is launched"
    if not isinstance(executor, LanedExecutor):
        dbos._executor_field = LanedExecutor(executor)
