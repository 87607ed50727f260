"""The ``ai_sdk`` channel: the Vercel AI SDK's UI message stream protocol, for ``useChat``.

Routes under the channel's path (the transport's ``api``):

- ``POST <path>``: a chat request; its last message is the next turn's message, or the
  answers to a parked turn's tool approvals. Answers with the turn's UI message stream.
- ``GET <path>/<chat id>/stream``: the transport's ``reconnectToStream``: the chat's
  running or parked turn replayed from its start and followed (204 when none is).
- ``POST <path>/<chat id>/cancel``: cancels the chat's running turn (the stream ends with
  ``abort``); a dropped request cancels nothing, it is resumed.
- ``GET <path>/page/…``: the files of ``Options.page``, when set (a chat page).

A chat id is the eve session's id when it is one (``useChat({id: sessionId})``); any other
id (useChat's generated ones) is mapped to a session through the session store's own
record, the idempotency key of the create that made it: no state of the channel's own.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import assert_never

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from eve.channels.ai_sdk_request import (
    Approvals,
    NewMessage,
    action_of,
    check_chat_id,
    decode,
)
from eve.channels.ai_sdk_stream import (
    DONE,
    HEADERS,
    KEEP_ALIVE,
    TURN_ENDS,
    Segment,
    sse,
)
from eve.channels.mount import ChannelMount
from eve.channels.sessions import ChannelSessions
from eve.errors import (
    EveError,
    InputRequestNotPending,
    InvalidBody,
    ServerConfigError,
    Unauthorized,
)
from eve.events import ActionsRequested, InputResolved, SessionEvent, TurnStarted, decode_event
from eve.server.answers import refusal
from eve.server.bodies import MAX_BODY_BYTES
from eve.server.followers import FollowedStream


class Options(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    #: a directory (relative to the app root) served at ``<path>/page/``: a chat page that
    #: talks to the channel from the same origin
    page: str | None = None


Handler = Callable[[Request], Awaitable[Response]]


def routes(mount: ChannelMount[Options]) -> list[BaseRoute]:
    chat = _Chat(mount)
    found: list[BaseRoute] = [
        Route(mount.path, _answering(chat.post), methods=["POST"]),
        Route(mount.path + "/{chat_id}/stream", _answering(chat.resume), methods=["GET"]),
        Route(mount.path + "/{chat_id}/cancel", _answering(chat.cancel), methods=["POST"]),
    ]
    if mount.options.page is not None:
        found.append(Mount(mount.path + "/page", app=_page(mount)))
    return found


def _page(mount: ChannelMount[Options]) -> StaticFiles:
    assert mount.options.page is not None
    directory = (mount.setup.app_root / mount.options.page).resolve()
    if not (directory / "index.html").is_file():
        raise ServerConfigError(
            f"channel {mount.name}: page={mount.options.page!r} has no index.html "
            f"(looked in {directory}); build the page there or leave page unset"
        )
    return StaticFiles(directory=directory, html=True)


def _answering(handler: Handler) -> Handler:
    """A refusal as eve's other routes answer one; the transport shows its text."""

    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except Unauthorized as error:
            return refusal(error, **{"www-authenticate": "Bearer"})
        except EveError as error:
            return refusal(error)

    return run


class _Chat:
    def __init__(self, mount: ChannelMount[Options]) -> None:
        self.mount = mount

    async def _sessions(self, request: Request) -> ChannelSessions:
        return self.mount.sessions(await self.mount.authenticate(request))

    async def post(self, request: Request) -> Response:
        sessions = await self._sessions(request)
        body = decode(await _read(request))
        action = action_of(body)  # refused before anything is stored
        session_id = await self._session(sessions, body.id)
        # read before the request acts: what it starts comes after
        end = await sessions.log_end(session_id)
        match action:
            case NewMessage(text=text, message_id=ui_id):
                accepted = await sessions.send(
                    session_id, text, key="ai_sdk:message:" + _digest(ui_id)
                )
                assert accepted.turn_id is not None
                segment = Segment(session_id=session_id, turn_id=accepted.turn_id)
                # a repeated request replays its turn from the log; a new one follows it
                segment.parked_before = end - 1 if accepted.replayed else end
                start = end
                if accepted.replayed:
                    start = await sessions.turn_start(session_id, accepted.turn_id)
                return await self._stream(request, sessions, segment, start, skip=True)
            case Approvals(responses=responses):
                ids = sorted(r.request_id for r in responses)
                turn_id = await _asking_turn(sessions, session_id, ids)
                turn_start = await sessions.turn_start(session_id, turn_id)
                key = "ai_sdk:approve:" + _digest(*ids, *(r.option_id for r in responses))
                accepted = await sessions.respond(session_id, responses, key=key)
                turn = await _stretch(sessions, session_id, turn_start, end)
                start = _resolved_at(turn, set(ids), end) if accepted.replayed else end
                segment = Segment(session_id=session_id, turn_id=turn_id, parked_before=start)
                segment.calls = _calls(turn)
                return await self._stream(request, sessions, segment, start, skip=False)
            case _:
                assert_never(action)

    async def resume(self, request: Request) -> Response:
        sessions = await self._sessions(request)
        chat_id = check_chat_id(request.path_params["chat_id"])
        session_id = await self._session(sessions, chat_id)
        end = await sessions.log_end(session_id)
        # the engine's word on what runs: the log may not say yet that a turn started
        turn_id = await sessions.running_turn(session_id)
        if turn_id is None:
            return Response(status_code=204)  # nothing running: nothing to resume
        start = await sessions.turn_start(session_id, turn_id)
        if any(isinstance(e, TURN_ENDS) for e in await _stretch(sessions, session_id, start, end)):
            return Response(status_code=204)  # it ended: its workflow is only finishing
        segment = Segment(session_id=session_id, turn_id=turn_id, parked_before=end - 1)
        return await self._stream(request, sessions, segment, start, skip=True)

    async def cancel(self, request: Request) -> Response:
        sessions = await self._sessions(request)
        session_id = await self._session(sessions, check_chat_id(request.path_params["chat_id"]))
        cancelled = await sessions.cancel(session_id)
        return JSONResponse({"ok": True, "sessionId": session_id, "cancelled": cancelled})

    async def _session(self, sessions: ChannelSessions, chat_id: str) -> str:
        """The session of a chat: the one it names, else the one its first request made."""
        # the key's fingerprint is of no message, so every request of the chat replays it
        key = "ai_sdk:chat:" + _digest(self.mount.name, sessions.principal.id, chat_id)
        return await sessions.conversation(chat_id, key=key)

    async def _stream(
        self,
        request: Request,
        sessions: ChannelSessions,
        segment: Segment,
        start: int,
        *,
        skip: bool,
    ) -> Response:
        # opened here, not in the body: a refusal is still an answer of its own
        events = await sessions.events(segment.session_id, start, follow=True)
        chunks = _chunks(events, segment, skip=skip)
        followers = getattr(request.app.state, "followers", None)
        response: StreamingResponse
        if followers is None:
            response = StreamingResponse(chunks)
        else:
            # ended whole when the server stops: the client reconnects (``resumeStream``)
            response = FollowedStream(chunks, followers=followers)
        for name, value in HEADERS.items():
            response.headers[name] = value
        return response


async def _chunks(
    events: AsyncIterator[str], segment: Segment, *, skip: bool
) -> AsyncIterator[bytes]:
    """The segment's SSE body, from the followed log; ``skip``: events before
    the turn's ``turn.started`` (a turn still running ahead of it) are not the turn's."""
    for chunk in segment.begin():
        yield sse(chunk)
    async for payload in events:
        if not payload:
            yield KEEP_ALIVE
            continue
        event = decode_event(payload)
        if skip:
            if not _starts(event, segment.turn_id):
                continue
            skip = False
        for chunk in segment.translate(event):
            yield sse(chunk)
        if segment.ended:
            yield DONE
            return


async def _read(request: Request) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise InvalidBody(f"the chat request is over {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _stretch(
    sessions: ChannelSessions, session_id: str, start: int, end: int
) -> list[SessionEvent]:
    """The session's events from ``start`` up to ``end`` (a turn's stretch of the log)."""
    events = await sessions.events(session_id, start, follow=False)
    read = [decode_event(payload) async for payload in events if payload]
    return [event for event in read if event.meta.index < end]


async def _asking_turn(sessions: ChannelSessions, session_id: str, request_ids: list[str]) -> str:
    """The turn that asked ``request_ids`` (answered already or not: a repeated approval
    replays it), as the engine recorded the asking."""
    turn_id = await sessions.asking_turn(session_id, request_ids)
    if turn_id is None:
        raise InputRequestNotPending(
            f"input request {request_ids[0]} was never asked in this chat",
            request_id=request_ids[0],
        )
    return turn_id


def _starts(event: SessionEvent, turn_id: str) -> bool:
    return (
        isinstance(event, TurnStarted)
        and event.data.node_id is None
        and (event.data.turn_id == turn_id)
    )


def _resolved_at(turn: list[SessionEvent], request_ids: set[str], end: int) -> int:
    """Where a repeated approval's answers were taken: its stream replays from there."""
    for event in turn:
        if isinstance(event, InputResolved) and event.data.request_id in request_ids:
            return event.meta.index
    return end


def _calls(log: list[SessionEvent]) -> set[str]:
    return {
        action.call_id
        for event in log
        if isinstance(event, ActionsRequested) and event.data.node_id is None
        for action in event.data.actions
    }


def _digest(*parts: str) -> str:
    """A key of bounded length (the store keeps 255 characters) from parts of any length."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()
