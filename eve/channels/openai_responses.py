"""``<path>/v1/responses``: a turn of an eve session as an OpenAI Response.

A response's id names its session, turn and the log index it reads from
(``openai_wire.response_id``), so ``previous_response_id`` continues the same durable
session and ``GET …/responses/{id}`` (``stream=true&starting_after=n`` to resume a dropped
stream) rebuilds it from the log: the same events with the same sequence numbers, every
time. A turn that waits on a person ends the response ``incomplete`` (reason
``input_required``) with an ``mcp_approval_request`` item per tool approval (a question or
a session limit as a message listing its answers); the next request answers with
``mcp_approval_response`` items, or with text naming an option.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from eve.channels.openai_wire import InputItem, ResponsesRequest, response_id, text_of, transcript
from eve.channels.sessions import ChannelSessions
from eve.channels.turn_log import Delta, Ended, Started, prompt, start_turn, turn_pieces
from eve.errors import ChannelRequestInvalid
from eve.events import ToolApprovalRequest
from eve.sessions import InputResponse

#: the final event of a stream, by how the turn ended (a cancelled turn fails the response)
_FINAL_EVENT = {
    "completed": "response.completed",
    "failed": "response.failed",
    "cancelled": "response.failed",
    "waiting": "response.incomplete",
}
_STATUS = {
    "completed": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
    "waiting": "incomplete",
}


@dataclass(frozen=True, kw_only=True)
class ResponseRef:
    """A response: a session's turn from a log index, as the channel names it."""

    session_id: str
    turn_id: str
    start: int
    model: str
    #: the label of the ``mcp_approval_request`` items (the channel's name)
    label: str

    @property
    def id(self) -> str:
        return response_id(self.session_id, self.turn_id, self.start)

    @classmethod
    def of(cls, started: Started, *, model: str, label: str) -> ResponseRef:
        return cls(
            session_id=started.session_id,
            turn_id=started.turn_id,
            start=started.start,
            model=model,
            label=label,
        )


# --- requests --------------------------------------------------------------------------


def _answers(items: list[InputItem]) -> list[InputResponse]:
    return [
        InputResponse(
            request_id=item.approval_request_id, option_id="approve" if item.approve else "deny"
        )
        for item in items
        if item.type == "mcp_approval_response" and item.approval_request_id is not None
    ]


def _said(body: ResponsesRequest) -> tuple[list[tuple[str, str]], str]:
    """The earlier messages of ``input`` and its last user text."""
    if isinstance(body.input, str):
        said = [("user", body.input)]
    else:
        said = [
            (item.role or "user", text_of(item.content, param=f"input[{i}].content"))
            for i, item in enumerate(body.input)
            if item.type in (None, "message")
        ]
    if body.instructions:
        said.insert(0, ("system", body.instructions))
    if not said or said[-1][0] != "user":
        return said, ""
    return said[:-1], said[-1][1]


async def start_response(
    sessions: ChannelSessions, body: ResponsesRequest, session_id: str | None, key: str | None
) -> Started:
    history, last = _said(body)
    answers = _answers(body.input) if isinstance(body.input, list) else []
    if not last.strip() and not answers:
        raise ChannelRequestInvalid(
            "`input` has no user text (nor mcp_approval_response items) to act on", param="input"
        )
    if session_id is None:
        if answers:
            raise ChannelRequestInvalid(
                "an mcp_approval_response needs the previous_response_id it answers",
                param="previous_response_id",
            )
        return await start_turn(sessions, None, transcript(history, last), key=key, param="input")
    return await start_turn(sessions, session_id, last, answers=answers, key=key, param="input")


# --- the response, as an object and as events --------------------------------------------


def _message(item_id: str, text: str, *, status: str = "completed") -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}] if text else []
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _request_items(ref: ResponseRef, end: Ended | None) -> list[dict[str, Any]]:
    items = []
    for request in end.requests if end else []:
        if isinstance(request, ToolApprovalRequest):
            items.append(
                {
                    "type": "mcp_approval_request",
                    "id": request.request_id,
                    "name": request.tool_name,
                    "arguments": json.dumps(request.input),
                    "server_label": ref.label,
                }
            )
        else:
            items.append(_message(f"msg_{request.request_id}", prompt(request)))
    return items


def response_object(
    ref: ResponseRef, text: str, end: Ended | None, *, created_at: float
) -> dict[str, Any]:
    """The response as OpenAI's ``Response``; ``in_progress`` while the turn has no end."""
    status = _STATUS[end.status] if end else "in_progress"
    output = ([_message(f"msg_{ref.id}", text)] if text else []) + _request_items(ref, end)
    error = None
    if end and end.status in ("failed", "cancelled"):
        error = {
            "code": f"turn_{end.status}",
            "message": end.error or f"the turn was {end.status}",
        }
    usage = None
    if end and end.usage:
        used = end.usage
        usage = {
            "input_tokens": used.input_tokens + used.cache_read_tokens + used.cache_write_tokens,
            "output_tokens": used.output_tokens,
            "total_tokens": used.input_tokens + used.output_tokens,
        }
    waiting = end is not None and end.status == "waiting"
    return {
        "id": ref.id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "model": ref.model,
        "output": output,
        "error": error,
        "incomplete_details": {"reason": "input_required"} if waiting else None,
        "usage": usage,
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "metadata": {},
    }


async def read_response(sessions: ChannelSessions, ref: ResponseRef) -> dict[str, Any]:
    """The response as the log has it now (``in_progress`` while its turn runs)."""
    texts: list[str] = []
    end: Ended | None = None
    async for piece in turn_pieces(sessions, ref.session_id, ref.turn_id, ref.start, follow=False):
        if isinstance(piece, Delta):
            texts.append(piece.text)
        elif isinstance(piece, Ended):
            end = piece
    return response_object(ref, "".join(texts), end, created_at=time.time())


async def await_response(sessions: ChannelSessions, ref: ResponseRef) -> dict[str, Any]:
    """The response once its turn ends or waits on a person."""
    final: dict[str, Any] = {}
    async for event in response_events(sessions, ref):
        if event is not None and "response" in event:
            final = event["response"]
    return final


async def response_events(
    sessions: ChannelSessions, ref: ResponseRef
) -> AsyncIterator[dict[str, Any] | None]:
    """The response's stream events, numbered from 0 (``None``: a keep-alive). The same log
    gives the same events, so a resumed stream skips what it saw by sequence number."""
    seq = 0
    created_at = time.time()

    def numbered(kind: str, **fields: Any) -> dict[str, Any]:
        nonlocal seq
        seq += 1
        return {"type": kind, "sequence_number": seq - 1, **fields}

    item_id = f"msg_{ref.id}"
    yield numbered(
        "response.created", response=response_object(ref, "", None, created_at=created_at)
    )
    yield numbered(
        "response.in_progress", response=response_object(ref, "", None, created_at=created_at)
    )
    texts: list[str] = []
    place = {"item_id": item_id, "output_index": 0, "content_index": 0}
    end: Ended | None = None
    async for piece in turn_pieces(sessions, ref.session_id, ref.turn_id, ref.start, follow=True):
        if piece is None:
            yield None
        elif isinstance(piece, Delta):
            if not texts:
                item = _message(item_id, "", status="in_progress")
                yield numbered("response.output_item.added", output_index=0, item=item)
                part = {"type": "output_text", "text": "", "annotations": []}
                yield numbered("response.content_part.added", **place, part=part)
            texts.append(piece.text)
            yield numbered("response.output_text.delta", **place, delta=piece.text, logprobs=[])
        else:
            end = piece
    assert end is not None  # a followed turn ends
    text = "".join(texts)
    if text:
        part = {"type": "output_text", "text": text, "annotations": []}
        yield numbered("response.output_text.done", **place, text=text, logprobs=[])
        yield numbered("response.content_part.done", **place, part=part)
        yield numbered("response.output_item.done", output_index=0, item=_message(item_id, text))
    for index, item in enumerate(_request_items(ref, end), start=1 if text else 0):
        yield numbered("response.output_item.added", output_index=index, item=item)
        yield numbered("response.output_item.done", output_index=index, item=item)
    final = response_object(ref, text, end, created_at=created_at)
    yield numbered(_FINAL_EVENT[end.status], response=final)


def sse(event: dict[str, Any] | None) -> str:
    if event is None:
        return ": keep-alive\n\n"
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
