"""``AsyncEveClient``: the session API over ``httpx.AsyncClient``, for asyncio code."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, TypeVar

import httpx

from eve._session_summary import SessionPage, SessionSummary
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
    """``EveClient`` for asyncio: the same methods, awaitable; streams are async iterators.

    ``url`` is the server's address (``http://127.0.0.1:8000``); ``token`` the bearer token
    when the server has one. A stream that loses its connection reconnects from the last
    index it saw for up to ``reconnect_timeout`` seconds, then raises ``ServerUnreachable``.
    """

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
        """What ``eve info --json`` prints, for the agent this server runs."""
        return await self._run(Calls.info())

    async def create(
        self, message: str | None = None, *, attachments: Sequence[Attachable] = ()
    ) -> Accepted:
        """A new session; with ``message`` (or ``attachments``) its first turn starts at once.

        ``attachments`` are ``ImagePart``/``DocumentPart`` values or paths of image and
        document files, sent after the text in order."""
        return await self._run(Calls.create(message, attachments))

    async def send(
        self, session_id: str, message: str, *, attachments: Sequence[Attachable] = ()
    ) -> Accepted:
        """A turn for ``message`` and its ``attachments`` (as in ``create``); one sent while a
        turn runs waits for it, in order."""
        return await self._run(Calls.send(session_id, message, attachments))

    async def respond(
        self,
        session_id: str,
        answers: Mapping[str, str],
        *,
        values: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Accepted:
        """Answer parked input requests: ``{request_id: option_id}``; ``values`` fill in the
        forms among them (an MCP server's elicitation), by request id."""
        return await self._run(Calls.respond(session_id, answers, values))

    async def session(self, session_id: str) -> SessionSummary:
        """The session's status, turns, tokens, cost, limits and what is left of each."""
        return await self._run(Calls.session(session_id))

    async def sessions(self, *, limit: int = 20, cursor: str | None = None) -> SessionPage:
        """A page of up to ``limit`` sessions (1 to 100), newest first; pass its
        ``next_cursor`` as ``cursor`` for the next, older page (None on the last one)."""
        return await self._run(Calls.sessions(limit, cursor))

    async def cancel(self, session_id: str) -> Accepted:
        """Stop the running turn (``status`` is ``cancelling`` or ``no_active_turn``)."""
        return await self._run(Calls.action(session_id, "cancel"))

    async def compact(self, session_id: str) -> Accepted:
        """Queue a compaction behind the session's turns (``status`` is ``compacting``);
        ``session.compacted`` in the event log says when it ran."""
        return await self._run(Calls.action(session_id, "compact"))

    async def reset(self, session_id: str) -> Accepted:
        """Cancel any running turn, then clear the session's history and state."""
        return await self._run(Calls.action(session_id, "reset"))

    async def fork(self, session_id: str) -> Accepted:
        """A new session that starts where ``session_id`` stands between its turns (as
        ``EveClient.fork``)."""
        return await self._run(Calls.fork(session_id))

    def stream(
        self,
        session_id: str,
        start_index: int = 0,
        *,
        follow: bool = True,
        until: frozenset[str] = frozenset(),
    ) -> AsyncIterator[SessionEvent]:
        """The session's events from ``start_index``; with ``follow``, new ones as they come,
        until an event whose type is in ``until`` (or forever)."""
        cursor = StreamCursor(start_index, until=until, reconnect_timeout=self.reconnect_timeout)
        return self._read(session_id, cursor, follow)

    def turn_events(
        self, session_id: str, turn_id: str | None, start_index: int = 0
    ) -> AsyncIterator[SessionEvent]:
        """One turn's events, ending with the event that ends its run (``TURN_END``)."""
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
