"""Request bodies (``eve.wire.requests``): read within a size limit, decode strictly, say
what is wrong.

A ``message`` is a string or a list of content parts (``text``, and ``image`` or
``document`` with base64 ``data`` or a ``url``); a part that is not valid is
``InvalidPart``, with its JSON path, rather than the body's generic ``InvalidBody``.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import TypeVar

import msgspec
from starlette.requests import Request

from eve.errors import BodyTooDeep, BodyTooLarge, InvalidBody, InvalidPart
from eve.messages import UserMessage, UserPart
from eve.wire.requests import FollowUpBody, RawMessage

T = TypeVar("T")

#: bytes; a message at the length limit and attachments at their total limit (in base64,
#: a third larger) fit with room for JSON
MAX_BODY_BYTES = 16_000_000
#: levels of nested arrays and objects; msgspec's decoder (and DBOS's encoders after it)
#: recurse once per level and run out of stack near 500
MAX_BODY_DEPTH = 64

#: a JSON string, escapes included: brackets inside one do not nest anything
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


async def read_body(request: Request, kind: type[T], limit: int = MAX_BODY_BYTES) -> T:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    raw = b"".join(chunks) or b"{}"
    check_depth(raw)
    try:
        return msgspec.json.decode(raw, type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise InvalidBody(f"the body is not valid: {error}") from None


def message_of(raw: RawMessage) -> str | UserMessage:
    """A body's ``message``: its text as it is, or its parts decoded and checked."""
    if isinstance(raw, str):
        return raw
    if not raw:
        raise InvalidPart("`message` is an empty list: send text or parts", path="$.message")
    try:
        parts = msgspec.convert(raw, type=list[UserPart])
    except msgspec.ValidationError as error:
        # msgspec names the place from the list (`$[1].data`); the body's is `$.message[1]`
        detail = str(error).replace("`$", "`$.message", 1)
        where = detail.rpartition("- at `")[2].rstrip("`") or "$.message"
        raise InvalidPart(f"a part of `message` is not valid: {detail}", path=where) from None
    return UserMessage(parts=parts)


def check_depth(raw: bytes, limit: int = MAX_BODY_DEPTH) -> None:
    """Refuse ``raw`` when its arrays and objects nest deeper than ``limit``, before any
    decoder recurses into it (a RecursionError would be a 500)."""
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    if len(brackets) <= limit:
        return  # too few brackets to be that deep
    depth = max(accumulate(1 if c in b"[{" else -1 for c in brackets))
    if depth > limit:
        raise BodyTooDeep(
            f"the body nests {depth} levels of arrays and objects; the limit is {limit}",
            limit=limit,
        )


def follow_up(body: FollowUpBody) -> FollowUpBody:
    if (body.message is None) == (body.input_responses is None):
        raise InvalidBody("send exactly one of `message` or `inputResponses`")
    if body.input_responses is not None and not body.input_responses:
        raise InvalidBody("`inputResponses` is empty")
    if body.turn_policy != "queue":
        raise InvalidBody(f"turnPolicy {body.turn_policy!r} is not supported; use 'queue'")
    return body


def _too_large(limit: int) -> BodyTooLarge:
    return BodyTooLarge(f"the body is over {limit} bytes", limit=limit)
