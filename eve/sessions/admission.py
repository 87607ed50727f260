"""Back-pressure at the door: a message is refused with ``QueueFull`` (503, ``Retry-After``)
while more turns wait in the durable queue, or for this worker's compute, than the server is
configured to take.

A request that is admitted is answered as soon as its turn is accepted durably (``202``);
this keeps the queue behind it from growing without bound, so a client learns at once that
the server is saturated instead of waiting while its turn sits behind thousands. The depth
is the turns not started yet, on every worker: the places accepted and not yet on DBOS's
queue (a 202 comes before its delivery), and the turn queue's workflows not started; parked
and running turns do not count. One count serves all the requests of ``FRESH_SECONDS``, so
admission costs no query per request under load.

A turn starts as soon as its session's previous one ends, so a saturated worker's backlog is
not in any queue: it is the steps waiting for one of its ``--concurrency`` permits
(``ComputeGate.waiting``), which this worker adds to the count, without a query. Without
them a worker with every permit taken and hundreds of steps waiting took every message.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from eve.errors import QueueFull

#: how long one count of the queue answers for
FRESH_SECONDS = 0.1
#: what a refused client is told to wait, in seconds (``Retry-After``)
RETRY_AFTER_SECONDS = 2


class Admission:
    def __init__(
        self, limit: int | None, count: Callable[[], int], waiting: Callable[[], int] = lambda: 0
    ) -> None:
        #: the most turns that may wait in the queue (``EVE_MAX_QUEUED_TURNS``); None: any
        self.limit = limit
        #: counts the queue (blocking): ``DurableEngine.queued_turns``
        self.count = count
        #: the steps waiting for this worker's compute now (``ComputeGate.waiting``)
        self.waiting = waiting
        self._counted_at = -FRESH_SECONDS
        self._depth = 0
        self._counting: asyncio.Task[int] | None = None

    async def check(self) -> None:
        """Raise ``QueueFull`` if the queue is at its limit; return at once without one."""
        if self.limit is None:
            return
        # the steps waiting first: a turn that starts while the queue is counted (in a
        # thread) left the count's places before it reached the gate, so read the other
        # way round, it was counted twice and a message refused under the limit
        waiting = self.waiting()
        depth = await self._queued() + waiting
        if depth >= self.limit:
            raise QueueFull(
                f"{depth} turns wait in the server's queue, its limit "
                f"(EVE_MAX_QUEUED_TURNS) is {self.limit}; nothing was accepted: "
                f"retry in {RETRY_AFTER_SECONDS} s",
                queued=depth,
                limit=self.limit,
                retry_after=RETRY_AFTER_SECONDS,
            )

    async def _queued(self) -> int:
        if time.monotonic() - self._counted_at < FRESH_SECONDS:
            return self._depth
        if self._counting is None or self._counting.done():
            # one count at a time, whoever asks meanwhile waits for it
            self._counting = asyncio.create_task(asyncio.to_thread(self.count))
        self._depth = await asyncio.shield(self._counting)
        self._counted_at = time.monotonic()
        return self._depth
