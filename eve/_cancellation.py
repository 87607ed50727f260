"""Cooperative cancellation: one signal per turn, checked where control returns to eve."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class CancelSignal:
    """Set once to ask a running turn to stop; tools may poll or await it."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "cancelled") -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    async def wait(self) -> None:
        await self._event.wait()


async def unless_cancelled(signal: CancelSignal, waiting: Awaitable[T]) -> T | None:
    """What ``waiting`` gives, or None when ``signal`` is set first (``waiting`` is then
    cancelled): a prompt or a read that a cancelled turn stops waiting for."""
    if signal.cancelled:
        if inspect.iscoroutine(waiting):
            waiting.close()  # never started: no "was never awaited" warning
        return None
    task = asyncio.ensure_future(waiting)
    stop = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait([task, stop], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (task, stop):
            pending.cancel()
    if task.done() and not task.cancelled():
        return task.result()
    return None
