"""What both SDK adapters share: one SDK client per event loop, and the stream pump.

The pump feeds each SDK item to a provider translator and yields eve events, stopping as
soon as the turn's cancel signal is set and always closing the SDK stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from eve.cancellation import CancelSignal
from eve.models.events import ModelEvent

C = TypeVar("C")
Item_contra = TypeVar("Item_contra", contravariant=True)


class Translator(Protocol[Item_contra]):
    def feed(self, item: Item_contra) -> Iterable[ModelEvent]: ...

    def finish(self) -> Iterable[ModelEvent]:
        """Events owed at the end; raises when the stream ended too early."""
        ...


class ClosableStream(Protocol):
    def __aiter__(self) -> AsyncIterator[Any]: ...

    async def close(self) -> None: ...


class LoopBoundClient(Generic[C]):
    """Pooled connections belong to the event loop that opened them, so each loop gets its
    own SDK client (``asyncio.run`` per CLI call, one loop per test)."""

    def __init__(self, factory: Callable[[], C]) -> None:
        self._factory = factory
        self._client: C | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> C:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = self._factory()
            self._loop = loop
        return self._client


async def pump(
    stream: ClosableStream, translator: Translator[Any], signal: CancelSignal
) -> AsyncIterator[ModelEvent]:
    try:
        async for item in stream:
            if signal.cancelled:
                return
            for out in translator.feed(item):
                yield out
                if signal.cancelled:
                    return
        for out in translator.finish():
            yield out
    finally:
        await stream.close()
