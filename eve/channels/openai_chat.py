"""``POST <path>/v1/chat/completions``: a turn of an eve session as a chat completion.

Without ``x-eve-session-id`` the request's messages open a fresh session (the history as its
first message); with it, the last user message goes to that session, which holds the rest.
The answer carries the session in the same header. A turn that waits on a person ends the
completion with the question and its answers as text; the next request, with the header,
answers it by one of them. Tool calls stay inside eve: no ``tool_calls`` reach the caller.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from eve._usage import TokenUsage
from eve.channels.openai_wire import (
    NO_RETRY,
    SESSION_HEADER,
    ChatRequest,
    failed_body,
    text_of,
    transcript,
)
from eve.channels.sessions import ChannelSessions
from eve.channels.turn_log import Delta, Ended, Started, prompt, start_turn, turn_pieces
from eve.errors import ChannelRequestInvalid


@dataclass(frozen=True, kw_only=True)
class ChatTurn:
    started: Started
    model: str

    @property
    def id(self) -> str:
        return f"chatcmpl-{self.started.turn_id}-{self.started.session_id}"

    @property
    def headers(self) -> dict[str, str]:
        return {SESSION_HEADER: self.started.session_id}


def _messages(body: ChatRequest) -> tuple[list[tuple[str, str]], str]:
    if not body.messages:
        raise ChannelRequestInvalid("`messages` is empty: send at least one", param="messages")
    said = [
        (m.role, text_of(m.content, param=f"messages[{i}].content"))
        for i, m in enumerate(body.messages)
    ]
    role, last = said[-1]
    if role != "user" or not last.strip():
        raise ChannelRequestInvalid(
            "the last message must be the user's, with text: it is what the agent answers",
            param=f"messages[{len(said) - 1}]",
        )
    return said[:-1], last


async def start_chat(
    sessions: ChannelSessions, body: ChatRequest, session_id: str | None, key: str | None
) -> Started:
    history, last = _messages(body)
    message = last if session_id is not None else transcript(history, last)
    return await start_turn(sessions, session_id, message, key=key, param="messages")


def _usage(usage: TokenUsage | None) -> dict[str, int] | None:
    if usage is None:
        return None
    prompt_tokens = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt_tokens + usage.output_tokens,
    }


def _closing_text(end: Ended) -> str:
    """What a waiting turn asks, as the completion's last words."""
    return "\n\n".join(prompt(r) for r in end.requests)


async def complete(sessions: ChannelSessions, turn: ChatTurn) -> Response:
    """The whole turn as one ``chat.completion`` (once it ends or waits on a person)."""
    texts: list[str] = []
    end: Ended | None = None
    started = turn.started
    pieces = turn_pieces(sessions, started.session_id, started.turn_id, started.start, follow=True)
    async for piece in pieces:
        if isinstance(piece, Delta):
            texts.append(piece.text)
        elif isinstance(piece, Ended):
            end = piece
    assert end is not None  # a followed turn ends
    if end.status == "failed":
        headers = {**turn.headers, **NO_RETRY}
        return JSONResponse(failed_body(end.error), status_code=500, headers=headers)
    closing = _closing_text(end)
    content = "".join(texts) + ("\n\n" if texts and closing else "") + closing
    body = {
        "id": turn.id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": turn.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": _usage(end.usage),
    }
    return JSONResponse(body, headers=turn.headers)


def stream(sessions: ChannelSessions, turn: ChatTurn, *, include_usage: bool) -> Response:
    """The turn as ``chat.completion.chunk`` server-sent events, ending ``[DONE]``."""
    return StreamingResponse(
        _chunks(sessions, turn, include_usage=include_usage),
        media_type="text/event-stream",
        headers={**turn.headers, "cache-control": "no-cache"},
    )


async def _chunks(
    sessions: ChannelSessions, turn: ChatTurn, *, include_usage: bool
) -> AsyncIterator[str]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {
            "id": turn.id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": turn.model,
            "choices": [choice],
            **more,
        }
        return f"data: {json.dumps(body)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    said = False
    started = turn.started
    pieces = turn_pieces(sessions, started.session_id, started.turn_id, started.start, follow=True)
    async for piece in pieces:
        if piece is None:
            yield ": keep-alive\n\n"
        elif isinstance(piece, Delta):
            said = True
            yield chunk({"content": piece.text})
        elif piece.status == "failed":
            # OpenAI's clients raise on an error object in the stream
            yield f"data: {json.dumps(failed_body(piece.error))}\n\n"
            return
        else:
            if closing := _closing_text(piece):
                yield chunk({"content": ("\n\n" if said else "") + closing})
            yield chunk({}, "stop")
            if include_usage:
                usage = _usage(piece.usage)
                body = {"id": turn.id, "object": "chat.completion.chunk", "choices": []}
                yield f"data: {json.dumps({**body, 'model': turn.model, 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"
