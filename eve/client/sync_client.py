"""``EveClient``: the session API over a blocking ``httpx.Client``."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
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


class EveClient:
    """Create sessions, send messages, answer input requests, cancel, reset, read events.

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
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.reconnect_timeout = reconnect_timeout
        self._http = httpx.Client(
            base_url=server_root(url),
            headers=auth_headers(token),
            timeout=timeout,
            transport=transport,
            verify=shared_tls_context("httpx"),
        )

    def __enter__(self) -> EveClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _run(self, call: Call[T]) -> T:
        """Send ``call``; a repeatable one is tried again as ``Attempt`` says."""
        attempt = Attempt(repeatable=call.repeatable, timeout=self.reconnect_timeout)
        while True:
            try:
                response = self._http.request(
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
            time.sleep(outcome)

    def health(self) -> dict[str, Any]:
        return self._run(Calls.health())

    def info(self) -> dict[str, Any]:
        """What ``eve info --json`` prints, for the agent this server runs."""
        return self._run(Calls.info())

    def create(
        self, message: str | None = None, *, attachments: Sequence[Attachable] = ()
    ) -> Accepted:
        """A new session; with ``message`` (or ``attachments``) its first turn starts at once.

        ``attachments`` are ``ImagePart``/``DocumentPart`` values or paths of image and
        document files, sent after the text in order."""
        return self._run(Calls.create(message, attachments))

    def send(
        self, session_id: str, message: str, *, attachments: Sequence[Attachable] = ()
    ) -> Accepted:
        """A turn for ``message`` and its ``attachments`` (as in ``create``); one sent while a
        turn runs waits for it, in order."""
        return self._run(Calls.send(session_id, message, attachments))

    def respond(
        self,
        session_id: str,
        answers: Mapping[str, str],
        *,
        values: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Accepted:
        """Answer parked input requests: ``{request_id: option_id}``; ``values`` fill in the
        forms among them (an MCP server's elicitation), by request id."""
        return self._run(Calls.respond(session_id, answers, values))

    def session(self, session_id: str) -> SessionSummary:
        """The session's status, turns, tokens, cost, limits and what is left of each."""
        return self._run(Calls.session(session_id))

    def sessions(self, *, limit: int = 20, cursor: str | None = None) -> SessionPage:
        """A page of up to ``limit`` sessions (1 to 100), newest first; pass its
        ``next_cursor`` as ``cursor`` for the next, older page (None on the last one)."""
        return self._run(Calls.sessions(limit, cursor))

    def cancel(self, session_id: str) -> Accepted:
        """Stop the running turn (``status`` is ``cancelling`` or ``no_active_turn``)."""
        return self._run(Calls.action(session_id, "cancel"))

    def compact(self, session_id: str) -> Accepted:
        """Queue a compaction behind the session's turns (``status`` is ``compacting``);
        ``session.compacted`` in the event log says when it ran."""
        return self._run(Calls.action(session_id, "compact"))

    def reset(self, session_id: str) -> Accepted:
        """Cancel any running turn, then clear the session's history and state."""
        return self._run(Calls.action(session_id, "reset"))

    def fork(self, session_id: str) -> Accepted:
        """A new session that starts where ``session_id`` stands between its turns, with its
        history, state and workspace (``status`` is ``forked``; ``session_id`` is the fork's,
        ``forked_from`` the source's). A source with a turn running or queued is refused
        (``APIError`` with code ``session_busy``)."""
        return self._run(Calls.fork(session_id))

    def stream(
        self,
        session_id: str,
        start_index: int = 0,
        *,
        follow: bool = True,
        until: frozenset[str] = frozenset(),
    ) -> Iterator[SessionEvent]:
        """The session's events from ``start_index``; with ``follow``, new ones as they come,
        until an event whose type is in ``until`` (or forever)."""
        cursor = StreamCursor(start_index, until=until, reconnect_timeout=self.reconnect_timeout)
        return self._read(session_id, cursor, follow)

    def turn_events(
        self, session_id: str, turn_id: str | None, start_index: int = 0
    ) -> Iterator[SessionEvent]:
        """One turn's events, ending with the event that ends its run (``TURN_END``)."""
        cursor = StreamCursor(
            start_index, until=TURN_END, turn_id=turn_id, reconnect_timeout=self.reconnect_timeout
        )
        return self._read(session_id, cursor, follow=True)

    def _read(self, session_id: str, cursor: StreamCursor, follow: bool) -> Iterator[SessionEvent]:
        path = session_path(session_id, "stream")
        while True:
            try:
                with self._http.stream("GET", path, params=cursor.params(follow)) as response:
                    if response.is_error:
                        raise api_error(response.status_code, response.read())
                    for line in response.iter_lines():
                        event = cursor.accept(line)
                        if event is not None:
                            yield event
                        if cursor.done:
                            return
            except httpx.TransportError as error:
                time.sleep(cursor.retry_delay(error))
                continue
            if not follow:
                return
