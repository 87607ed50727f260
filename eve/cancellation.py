"""Cooperative cancellation: one signal per turn, checked where control returns to eve."""

from __future__ import annotations

import asyncio


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
