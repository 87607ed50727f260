"""The ``ag_ui`` channel kind: AG-UI 1.0 (``RunAgentInput`` in, SSE events out) over a
durable session, as CopilotKit and ``@ag-ui/client``'s ``HttpAgent`` speak it.

A thread is a session: a thread id that is an eve session id continues it, any other names
one through the session store's idempotency record of its first run (docs/channels/ag_ui.md
says for how long). A run is a window over the session's log (``eve.channels.ag_ui_view``):
the turn its newest user message started, or the rest of a parked turn its ``resume``
answered. The user message's id is the send's idempotency key, so the same input posted
again (a dropped connection) streams the same turn from the log instead of starting
another. Nothing is kept here: a run reads the log from where its turn (or the request its
resume answers) starts, and a run that sends the conversation (a reconnect, a repeat) from
the start.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateSnapshotEvent,
    TextPart,
    UserMessage,
)
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from eve._redact import redact
from eve.channels.ag_ui_view import RunView, is_logged_user_message
from eve.channels.mount import ChannelMount
from eve.channels.sessions import ChannelSessions
from eve.errors import EveError, InputRequestNotPending, InvalidBody
from eve.events import decode_event
from eve.sessions import InputResponse


class Options(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The ``ag_ui`` kind has no settings: auth is the server's bearer token."""


#: what ``RUN_STARTED.metadata`` names the thread's eve session by
SESSION_METADATA = "eveSessionId"
_encoder = EventEncoder()


def routes(mount: ChannelMount[Options]) -> list[BaseRoute]:
    async def run(request: Request) -> Response:
        return await _run(mount, request)

    async def cancel(request: Request) -> Response:
        return await _cancel(mount, request)

    return [
        Route(mount.path, run, methods=["POST"]),
        Route(mount.path + "/cancel", cancel, methods=["POST"]),
    ]


def _refusal(error: EveError) -> JSONResponse:
    body = {"ok": False, "code": error.code, "error": redact(str(error))}
    return JSONResponse(body, status_code=error.http_status)


async def _run(mount: ChannelMount[Options], request: Request) -> Response:
    try:
        sessions = mount.sessions(await mount.authenticate(request))
        run_input = _parsed(await request.body())
        view = await _started(sessions, run_input)
    except EveError as error:
        return _refusal(error)
    return StreamingResponse(
        _stream(sessions, view),
        media_type=_encoder.get_content_type(),
        headers={"Cache-Control": "no-cache"},
    )


async def _cancel(mount: ChannelMount[Options], request: Request) -> Response:
    """``POST <path>/cancel`` with ``{"threadId": ...}``: cancel the thread's running turn;
    its run ends with ``RUN_FINISHED`` whose outcome is ``cancelled``."""
    try:
        sessions = mount.sessions(await mount.authenticate(request))
        thread = _decode_cancel(await request.body())
        cancelled = await sessions.cancel(await _session_of(sessions, thread.thread_id))
    except EveError as error:
        return _refusal(error)
    return JSONResponse({"ok": True, "cancelled": cancelled})


class _CancelBody(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    thread_id: str


def _decode_cancel(body: bytes) -> _CancelBody:
    try:
        return msgspec.json.decode(body, type=_CancelBody)
    except msgspec.DecodeError as error:
        raise InvalidBody(f'the cancel body must be {{"threadId": "..."}}: {error}') from error


# --- the run's input ------------------------------------------------------------------


def _parsed(body: bytes) -> RunAgentInput:
    """The body as a ``RunAgentInput``, or ``InvalidBody`` naming the first fields wrong."""
    try:
        return RunAgentInput.model_validate_json(body)
    except ValidationError as error:
        wrong = "; ".join(
            f"$.{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}"
            for problem in error.errors()[:3]
        )
        raise InvalidBody(f"the body is not an AG-UI RunAgentInput: {wrong}") from error


def _key(kind: str, value: str) -> str:
    """An idempotency key from a client's id: hashed, so any id fits the key's rules."""
    return f"ag-ui:{kind}:{hashlib.sha256(value.encode()).hexdigest()[:40]}"


def _newest_user_message(run: RunAgentInput) -> tuple[str, str] | None:
    """The id and text of the input's newest user message (AG-UI sends the whole
    conversation; eve holds it already, so only that message may be new), or None when it
    is one a ``MESSAGES_SNAPSHOT`` gave: the session has it already."""
    users = [m for m in run.messages if isinstance(m, UserMessage)]
    if not users:
        raise InvalidBody("a run needs a user message in messages, or resume entries")
    message = users[-1]
    if is_logged_user_message(message.id):
        return None
    if isinstance(message.content, str):
        text = message.content
    else:
        others = [type(part).__name__ for part in message.content if not isinstance(part, TextPart)]
        if others:
            raise InvalidBody(
                f"user message {message.id} has {', '.join(others)} parts; this channel takes "
                "text parts only"
            )
        text = "".join(part.text for part in message.content if isinstance(part, TextPart))
    if not text.strip():
        raise InvalidBody(f"user message {message.id} has no text")
    return message.id, text


def _responses(entries: list[ResumeEntry]) -> list[InputResponse]:
    """Resume entries as eve answers: ``payload`` is ``{"optionId": ...}`` (with a form's
    ``values`` to accept it: the interrupt's ``responseSchema`` says) or the option id.
    The values are checked against the form's fields where eve takes the answer."""
    answers = []
    for entry in entries:
        payload: Any = entry.payload
        option = payload.get("optionId") if isinstance(payload, dict) else payload
        values = payload.get("values") if isinstance(payload, dict) else None
        if not isinstance(option, str):
            raise InvalidBody(
                f"resume entry for {entry.interrupt_id}: a resolved entry's payload is "
                '{"optionId": "<option>"} (or the option id as a string)'
            )
        if values is not None and not isinstance(values, dict):
            raise InvalidBody(
                f"resume entry for {entry.interrupt_id}: payload.values is the form's "
                "fields as an object"
            )
        answers.append(
            InputResponse(request_id=entry.interrupt_id, option_id=option, values=values)
        )
    return answers


# --- what the run does ------------------------------------------------------------------


async def _session_of(sessions: ChannelSessions, thread_id: str) -> str:
    """The thread's session: the session of that id, else the one its first run opened."""
    return await sessions.conversation(thread_id, key=_key("thread", thread_id))


async def _started(sessions: ChannelSessions, run: RunAgentInput) -> RunView:
    """Do what the input asks (answer interrupts, or send its newest user message) and
    return the view of the run that shows it."""
    if run.resume:
        return await _resumed(sessions, run, run.resume)
    message = _newest_user_message(run)  # checked before anything is stored
    session_id = await _session_of(sessions, run.thread_id)
    view = RunView(thread_id=run.thread_id, run_id=run.run_id, session_id=session_id)
    if message is None:
        # nothing new: show the thread's latest turn from the log (a client reconnecting)
        view.turn_id, view.snapshot = await sessions.latest_turn(session_id), True
        return view
    message_id, text = message
    end = await sessions.log_end(session_id)
    accepted = await sessions.send(session_id, text, key=_key("message", message_id))
    view.turn_id, view.snapshot = accepted.turn_id, accepted.replayed
    # a new turn starts past the log's end as it was before the send; a replay's snapshot
    # is the thread's whole conversation, so it reads from the start
    view.start = 0 if accepted.replayed else end
    return view


async def _resumed(
    sessions: ChannelSessions, run: RunAgentInput, entries: list[ResumeEntry]
) -> RunView:
    resolved = [entry for entry in entries if entry.status == "resolved"]
    answers = _responses(resolved)
    session_id = await _session_of(sessions, run.thread_id)
    # the engine's open requests, not the log's (a flush behind: an answer it took already
    # may still look open there); the window opens on the request, read from its asker's
    # first event on
    end, rows, asked_from = await sessions.open_requests(session_id)
    waiting = {row.request_id for row in rows}
    for entry in entries:
        if entry.interrupt_id not in waiting:
            raise InputRequestNotPending(
                f"interrupt {entry.interrupt_id} is not waiting in thread {run.thread_id}",
                request_id=entry.interrupt_id,
            )
    if len(resolved) < len(entries):
        # an interrupt abandoned: the turn waiting on it is cancelled (its other requests
        # resolve as cancelled with it)
        await sessions.cancel(session_id)
    elif answers:
        await sessions.respond(session_id, answers, key=_key("resume", run.run_id))
    return RunView(
        thread_id=run.thread_id,
        run_id=run.run_id,
        session_id=session_id,
        answered=frozenset(entry.interrupt_id for entry in entries),
        start=end if asked_from is None else asked_from,
    )


# --- the stream -------------------------------------------------------------------------


def _sse(event: BaseEvent) -> str:
    return _encoder.encode(event)


async def _stream(sessions: ChannelSessions, view: RunView) -> AsyncIterator[str]:
    yield _sse(
        RunStartedEvent(
            thread_id=view.thread_id,
            run_id=view.run_id,
            protocol_version=PROTOCOL_VERSION,
            metadata={SESSION_METADATA: view.session_id},
        )
    )
    try:
        async for chunk in _window(sessions, view):
            yield chunk
        ending = view.ending or RunErrorEvent(message="the session's log ended", code="log_ended")
        if isinstance(ending, RunFinishedEvent):
            state = await sessions.state(view.session_id)
            yield _sse(StateSnapshotEvent(snapshot=state))
        yield _sse(ending)
    except EveError as error:
        yield _sse(RunErrorEvent(message=redact(str(error)), code=error.code))


async def _window(sessions: ChannelSessions, view: RunView) -> AsyncIterator[str]:
    if view.turn_id is None and not view.answered:
        async for line in await sessions.events(view.session_id, 0, follow=False):
            if line:
                view.feed(decode_event(line))
        yield _sse(view.messages())
        view.finish_without_turn()
        return
    async for line in await sessions.events(view.session_id, view.start, follow=True):
        if not line:
            yield ": keep-alive\n\n"
            continue
        for event in view.feed(decode_event(line)):
            yield _sse(event)
        if view.ending is not None:
            return
