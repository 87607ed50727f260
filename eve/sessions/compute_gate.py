"""The worker's compute permits: a turn holds one only while one of its steps computes.

DBOS's turn queue admits every session's next turn (one per session at a time, in order);
what ``--concurrency`` bounds is how many steps (a model call and its tool calls, a
workflow tool's ``step``) compute at once in this worker. A turn parked on a person, an
event or a sleep waits in a DBOS ``recv`` between steps and holds no permit, so parked
sessions, however many, never delay a new session's turn (docs/sessions.md says why this
design rather than ending the workflow at the park).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class ComputeGate:
    def __init__(self, permits: int) -> None:
        self.permits = permits
        self._semaphore = asyncio.Semaphore(permits)
        #: steps computing now, for tests and the log
        self.busy = 0
        #: steps waiting for a permit now: this worker's saturation, which admission counts
        #: (``admission.py``) since a turn started at once waits here, not in a queue
        self.waiting = 0

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """One permit while the block runs; waits first-come, first-served for one."""
        self.waiting += 1
        try:
            await self._semaphore.acquire()
        finally:
            self.waiting -= 1
        self.busy += 1
        try:
            yield
        finally:
            self.busy -= 1
            self._semaphore.release()
