"""What both SDK adapters share: ``SDKModel``, one SDK client per event loop, the pump, retries.

The pump feeds each SDK item to a provider translator and yields eve events, stopping as
soon as the turn's cancel signal is set and always closing the SDK stream. A provider
adapter subclasses ``SDKModel`` and supplies only what differs: how to make its SDK client,
how to start a stream, its translator and how its SDK's exceptions map to eve's.

``SDKModel.stream`` tries a call again when it fails in a transient way (``_retry``),
announcing each retry with a ``Retrying`` event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, Generic, Protocol, TypeVar

from eve._cancellation import CancelSignal
from eve.errors import ModelError, ModelRetriesExhausted
from eve.models._retry import GiveUp, Wait, next_try
from eve.models.base import ModelRequest
from eve.models.events import ModelEvent, Retrying

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


async def _cancelled_during(signal: CancelSignal, wait: Wait) -> bool:
    """Wait ``wait.seconds``; True as soon as the turn is cancelled meanwhile."""
    try:
        await asyncio.wait_for(signal.wait(), timeout=wait.seconds)
    except TimeoutError:
        return False
    return True


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
        """One model call, tried again while it fails transiently (``request.retries``).

        eve retries here, and the SDK clients are built with ``max_retries=0``. The SDKs'
        own retry sees only statuses, inside ``create()``: it cannot announce a retry, its
        sleep does not listen to the turn's cancel signal, and it cannot see an ``error``
        event inside a 200 stream or a stream cut off after the first event, which eve must
        retry anyway. One loop for all of them keeps every retry visible (a ``Retrying``
        event, published as ``model.retrying``), interruptible (the wait ends when the
        signal is set) and counted once against ``retries.attempts``, where two layers
        would multiply. The SDKs' rules are kept (``_retry``). A retry happens inside this
        one call, so in a durable session it stays inside the one step of the response.
        """
        failures: list[str] = []
        for attempt in range(1, request.retries.attempts + 1):
            if request.signal.cancelled:
                return
            try:
                async for out in self._attempt(request):
                    yield out
                return
            except ModelError as error:
                failures.append(str(error))
                decision = next_try(error, retry=attempt, policy=request.retries)
                if isinstance(decision, GiveUp):
                    if decision.why is None:
                        raise  # nothing to retry: the failure as it came
                    raise self._exhausted(decision.why, failures) from error
            # the wait is outside the except block, so the error is not kept alive through it
            yield Retrying(retry=attempt, delay=decision.seconds, reason=failures[-1])
            if await _cancelled_during(request.signal, decision):
                return

    async def _attempt(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        with self._sdk_errors():
            items = await self._start(request)
            async for out in pump(items, self._translator(), request.signal):
                yield out

    def _exhausted(self, why: str, failures: list[str]) -> ModelRetriesExhausted:
        tries = "; ".join(f"{n}. {reason}" for n, reason in enumerate(failures, 1))
        count = f"{len(failures)} attempt{'s' if len(failures) > 1 else ''}"
        return ModelRetriesExhausted(
            f"{self.model_id}: gave up after {count} ({why}): {tries}. Try again later, or "
            "raise define_agent(retries={'attempts': ..., 'max_delay_seconds': ...})",
            provider=self.provider,
            attempts=len(failures),
            failures=failures,
        )

    def _new_client(self) -> C:
        """The SDK client, with ``max_retries=0`` (``stream`` says why)."""
        raise NotImplementedError

    async def _start(self, request: ModelRequest) -> ClosableStream:
        raise NotImplementedError

    def _translator(self) -> Translator[Any]:
        raise NotImplementedError

    def _sdk_errors(self) -> AbstractContextManager[None]:
        raise NotImplementedError
