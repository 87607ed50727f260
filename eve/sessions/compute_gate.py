"""The worker's compute permits: a turn holds one only while one of its steps computes.

DBOS's turn queue admits every session's next turn (one per session at a time, in order);
what ``--concurrency`` bounds is how many steps (a model call and its tool calls, a
workflow tool's ``step``) compute at once in this worker. A turn parked on a person, an
event or a sleep waits in a DBOS ``recv`` between steps and holds no permit, so parked
sessions, however many, never delay a new session's turn (docs/sessions.md says why this
design rather than ending the workflow at the park).

Not ``asyncio.Semaphore``: on Python 3.11 its ``acquire`` asks ``locked()``, which looks at
every waiter (``any(not w.cancelled() ...)``), so with hundreds of steps waiting each
acquire cost as much as the queue was long (4 % of a worker at 500 live sessions). Here a
permit is taken or handed on in O(1); only a cancelled waiter is looked for in the queue.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class ComputeGate:
    def __init__(self, permits: int) -> None:
        self.permits = permits
        #: steps computing now (a permit handed on counts at once), for tests and the log
        self.busy = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        """Steps waiting for a permit now: this worker's saturation, which admission counts
        (``admission.py``) since a turn started at once waits here, not in a queue."""
        return len(self._waiters)

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """One permit while the block runs; waits first-come, first-served for one."""
        await self._acquire()
        try:
            yield
        finally:
            self._release()

    async def _acquire(self) -> None:
        if self.busy < self.permits and not self._waiters:
            self.busy += 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(granted)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release()  # handed a permit as it was cancelled: the next one gets it
            elif granted in self._waiters:  # a release may have passed it over already
                self._waiters.remove(granted)
            raise

    def _release(self) -> None:
        """Hand the permit to the first waiter still waiting (``busy`` stays), or free it."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.busy -= 1
