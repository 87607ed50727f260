"""The OpenAI-compatible channel's wire: request bodies, ids, errors and the transcript.

Bodies accept the fields OpenAI's clients send and ignore the ones eve has no use for
(``temperature``, ``tools``…): the agent decides those. What eve cannot take (a part that
is not text, a conversation that does not end with the user) is refused with OpenAI's error
shape, ``{"error": {"message", "type", "param", "code"}}``, before anything is stored.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse

from eve.errors import ChannelRequestInvalid, ChannelResponseUnknown, EveError, InvalidBody
from eve.server.bodies import read_body

#: a client sends it to continue a session rather than replay its history in a fresh one
SESSION_HEADER = "x-eve-session-id"


class ContentPart(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    text: str | None = None


Content = str | list[ContentPart] | None


class ChatMessage(msgspec.Struct, frozen=True, kw_only=True):
    role: str
    content: Content = None


class StreamOptions(msgspec.Struct, frozen=True, kw_only=True):
    include_usage: bool = False


class ChatRequest(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    messages: list[ChatMessage]
    stream: bool = False
    stream_options: StreamOptions | None = None


class InputItem(msgspec.Struct, frozen=True, kw_only=True):
    """A Responses input item: a message (``type`` ``message`` or none) or an approval."""

    type: str | None = None
    role: str | None = None
    content: Content = None
    approval_request_id: str | None = None
    approve: bool | None = None


class ResponsesRequest(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    input: str | list[InputItem]
    previous_response_id: str | None = None
    instructions: str | None = None
    stream: bool = False


_AT = re.compile(r"at `\$\.?([^`]*)`")


T = TypeVar("T")


async def read_request(request: Request, kind: type[T]) -> T:
    """The body as ``kind``; a body that is not one is a 400 naming the field at fault."""
    try:
        return await read_body(request, kind)
    except InvalidBody as error:
        found = _AT.search(error.message)
        raise ChannelRequestInvalid(
            error.message, param=found.group(1) if found else None
        ) from None


def text_of(content: Content, *, param: str) -> str:
    """A message's text: a string, or text parts joined; another part is refused."""
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for i, part in enumerate(content):
        if part.type not in ("text", "input_text", "output_text") or part.text is None:
            raise ChannelRequestInvalid(
                f"content part of type {part.type!r} is not supported: this endpoint takes text",
                param=f"{param}[{i}]",
            )
        texts.append(part.text)
    return "".join(texts)


def transcript(history: list[tuple[str, str]], last: str) -> str:
    """A fresh session's first message: the caller's earlier messages, then its last one.
    The agent has its own instructions; a caller's system messages are context for it."""
    if not history:
        return last
    earlier = "\n".join(f"{role}: {text}" for role, text in history)
    return f"Earlier in this conversation:\n{earlier}\n\nThe user now says:\n{last}"


# --- ids -------------------------------------------------------------------------------


def response_id(session_id: str, turn_id: str, start: int) -> str:
    """``resp_<turn>_<log index>_<session>``: the turn of a session, read from an index (an
    answered approval continues the same turn in a new response). Nothing is stored for it."""
    return f"resp_{turn_id.removeprefix('turn_')}_{start}_{session_id}"


def parse_response_id(raw: str, *, param: str | None = None) -> tuple[str, str, int]:
    """The session, turn and start index a response id names."""
    prefix, _, rest = raw.partition("_")
    turn, _, rest = rest.partition("_")
    start, _, session_id = rest.partition("_")
    if prefix != "resp" or not turn.isdigit() or not start.isdigit() or not session_id:
        raise ChannelResponseUnknown(
            f"{raw!r} is not a response id this channel gave out", param=param, response_id=raw
        )
    return session_id, f"turn_{turn}", int(start)


# --- errors ----------------------------------------------------------------------------


def error_body(error: EveError) -> dict[str, Any]:
    status = error.http_status
    kind = "server_error" if status >= 500 else "invalid_request_error"
    if status == 401:
        kind = "authentication_error"
    return {
        "error": {
            "message": error.message,
            "type": kind,
            "param": getattr(error, "param", None),
            "code": "invalid_api_key" if status == 401 else error.code,
        }
    }


#: OpenAI's SDKs retry a 409 or a 5xx unless told not to; eve's refusals are answers (the
#: same request is refused again) and a failed turn is durable, so a retry would only start
#: another turn: every error says ``x-should-retry: false``
NO_RETRY = {"x-should-retry": "false"}


def error_response(error: EveError) -> JSONResponse:
    return JSONResponse(error_body(error), status_code=error.http_status, headers=NO_RETRY)


def failed_body(error: str | None) -> dict[str, Any]:
    """A turn that failed inside eve (the log's redacted error), as OpenAI's error shape."""
    message = f"the agent's turn failed: {error or 'no error was recorded'}"
    return {
        "error": {"message": message, "type": "server_error", "param": None, "code": "turn_failed"}
    }
