"""``AsyncEveClient``: the session API over ``httpx.AsyncClient``, for asyncio code.

Each method is ``EveClient``'s of the same name, awaitable: both send the same ``Call``
(``calls.py``), so what a method does is said once, on ``EveClient``, and each method here
points there (``tests/client/test_twins.py`` holds the two to one list of signatures).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, TypeVar

import httpx

from eve._session_summary import SessionPage, SessionSummary
from eve._tls import shared_tls_context
from eve.client.calls import Call, Calls, session_path
from eve.client.protocol import (
    TURN_END,
    Attachable,
    Attempt,
    StreamCursor,
    api_error,
    auth_headers,
    server_root,
)
from eve.events import SessionEvent
from eve.wire.answers import Accepted

T = TypeVar("T")


class AsyncEveClient:
    """``EveClient`` for asyncio: the same methods and arguments, awaitable; streams are
    async iterators; ``aclose`` for ``close``."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout: float = 30.0,
        reconnect_timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.reconnect_timeout = reconnect_timeout
        self._http = httpx.AsyncClient(
            base_url=server_root(url),
            headers=auth_headers(token),
            timeout=timeout,
            transport=transport,
            verify=shared_tls_context("httpx"),
        )

    async def __aenter__(self) -> AsyncEveClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _run(self, call: Call[T]) -> T:
        """Send ``call``; a repeatable one is tried again as ``Attempt`` says."""
        attempt = Attempt(repeatable=call.repeatable, timeout=self.reconnect_timeout)
        while True:
            try:
                response = await self._http.request(
                    call.method,
                    call.path,
                    content=call.content,
                    headers=call.headers(attempt.headers),
                )
            except httpx.TransportError as error:
                outcome = attempt.outcome(error)
            else:
                outcome = attempt.outcome(response)
            if isinstance(outcome, bytes):
                return call.read(outcome)
            await asyncio.sleep(outcome)

    async def health(self) -> dict[str, Any]:
        return await self._run(Calls.health())

    async def info(self) -> dict[str, Any]:
        """As ``EveClient.info``."""
        return await self._run(Calls.info())

    async def create(
        self, message: str | None = None, *, attachments: Sequence[Attachable] = ()
    ) -> Accepted:
        """As ``EveClient.create``."""
        return await self._run(Calls.create(message, attachments))

    async def send(
        self, session_id: str, message: str, *, attachments: Sequence[Attachable] = ()
    ) -> Accepted:
        """As ``EveClient.send``."""
        return await self._run(Calls.send(session_id, message, attachments))

    async def respond(
        self,
        session_id: str,
        answers: Mapping[str, str],
        *,
        values: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Accepted:
        """As ``EveClient.respond``."""
        return await self._run(Calls.respond(session_id, answers, values))

    async def session(self, session_id: str) -> SessionSummary:
        """As ``EveClient.session``."""
        return await self._run(Calls.session(session_id))

    async def sessions(self, *, limit: int = 20, cursor: str | None = None) -> SessionPage:
        """As ``EveClient.sessions``."""
        return await self._run(Calls.sessions(limit, cursor))

    async def cancel(self, session_id: str) -> Accepted:
        """As ``EveClient.cancel``."""
        return await self._run(Calls.action(session_id, "cancel"))

    async def compact(self, session_id: str) -> Accepted:
        """As ``EveClient.compact``."""
        return await self._run(Calls.action(session_id, "compact"))

    async def reset(self, session_id: str) -> Accepted:
        """As ``EveClient.reset``."""
        return await self._run(Calls.action(session_id, "reset"))

    async def fork(self, session_id: str) -> Accepted:
        """As ``EveClient.fork``."""
        return await self._run(Calls.fork(session_id))

    def stream(
        self,
        session_id: str,
        start_index: int = 0,
        *,
        follow: bool = True,
        until: frozenset[str] = frozenset(),
    ) -> AsyncIterator[SessionEvent]:
        """As ``EveClient.stream``."""
        cursor = StreamCursor(start_index, until=until, reconnect_timeout=self.reconnect_timeout)
        return self._read(session_id, cursor, follow)

    def turn_events(
        self, session_id: str, turn_id: str | None, start_index: int = 0
    ) -> AsyncIterator[SessionEvent]:
        """As ``EveClient.turn_events``."""
        cursor = StreamCursor(
            start_index, until=TURN_END, turn_id=turn_id, reconnect_timeout=self.reconnect_timeout
        )
        return self._read(session_id, cursor, follow=True)

    async def _read(
        self, session_id: str, cursor: StreamCursor, follow: bool
    ) -> AsyncIterator[SessionEvent]:
        path = session_path(session_id, "stream")
        while True:
            try:
                async with self._http.stream("GET", path, params=cursor.params(follow)) as response:
                    if response.is_error:
                        raise api_error(response.status_code, await response.aread())
                    async for line in response.aiter_lines():
                        event = cursor.accept(line)
                        if event is not None:
                            yield event
                        if cursor.done:
                            return
            except httpx.TransportError as error:
                await asyncio.sleep(cursor.retry_delay(error))
                continue
            if not follow:
                return
