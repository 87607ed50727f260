"""What both SDK adapters share: ``SDKModel``, one SDK client per event loop, the pump.

The pump feeds each SDK item to a provider translator and yields eve events, stopping as
soon as the turn's cancel signal is set and always closing the SDK stream. A provider
adapter subclasses ``SDKModel`` and supplies only what differs: how to make its SDK client,
how to start a stream, its translator and how its SDK's exceptions map to eve's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, Generic, Protocol, TypeVar

from eve.cancellation import CancelSignal
from eve.models.base import ModelRequest
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


class SDKModel(Generic[C]):
    """A ``ModelClient`` on a provider SDK; ``provider`` prefixes ``model_id``."""

    provider: str

    def __init__(self, model: str, *, api_key: str, base_url: str | None, max_retries: int):
        self._model = model
        self._api_key = api_key
        self._base_url = base_url
        self._max_retries = max_retries
        self._clients: LoopBoundClient[C] = LoopBoundClient(self._new_client)

    @property
    def model_id(self) -> str:
        return f"{self.provider}/{self._model}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model!r}, base_url={self._base_url!r})"

    def _sdk(self) -> C:
        return self._clients.get()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.signal.cancelled:
            return
        with self._sdk_errors():
            items = await self._start(request)
            async for out in pump(items, self._translator(), request.signal):
                yield out

    def _new_client(self) -> C:
        raise NotImplementedError

    async def _start(self, request: ModelRequest) -> ClosableStream:
        raise NotImplementedError

    def _translator(self) -> Translator[Any]:
        raise NotImplementedError

    def _sdk_errors(self) -> AbstractContextManager[None]:
        raise NotImplementedError
