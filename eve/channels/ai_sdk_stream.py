"""eve's session events as the AI SDK's UI message stream chunks (``ai`` 6, protocol ``v1``).

One eve turn is one assistant UI message, whose id is ``<session id>:<turn id>``, so a
stream that continues a parked turn (an approval answered) continues the same message and a
replay rebuilds it. A stream is a *segment* of the turn: it starts with ``start`` and ends
with ``finish`` where the turn ends or parks on a person's answer (``turn.waiting``), or with
``abort`` where it is cancelled. Events the vocabulary has no word for go out as transient
``data-eve`` parts (the client's ``onData`` sees them; the message keeps none of them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

import msgspec

from eve.events import (
    ActionPartial,
    ActionResult,
    ActionsRequested,
    Event,
    InputRequest,
    InputRequested,
    MessageAppended,
    MessageCompleted,
    ModelFallback,
    ModelRetrying,
    ReasoningAppended,
    ResultStatus,
    SessionEvent,
    StepCompleted,
    StepStarted,
    ToolApprovalRequest,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStop,
    TurnWaiting,
)

#: one UI message stream chunk, as JSON data
Chunk = dict[str, Any]
#: the ``finish`` chunk's reasons the ``ai`` package's schema accepts
FinishReason = Literal["stop", "length", "content-filter", "tool-calls", "error", "other"]

#: what the ``ai`` package's ``createUIMessageStreamResponse`` answers with
HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}

_FINISH: dict[TurnStop, FinishReason] = {
    "complete": "stop",
    "max_turns": "length",
    "aborted": "other",
    "session_limit": "other",
}

#: the events that end a turn; a segment also ends where the turn parks
TURN_ENDS = (TurnCompleted, TurnFailed, TurnCancelled)


def message_id(session_id: str, turn_id: str) -> str:
    """The assistant UI message of one eve turn."""
    return f"{session_id}:{turn_id}"


def sse(chunk: Chunk) -> bytes:
    """One chunk as a server-sent event, as the ``ai`` package's ``JsonToSseTransformStream``
    writes it."""
    return b"data: " + msgspec.json.encode(chunk) + b"\n\n"


#: the stream's last event, after its last chunk
DONE = b"data: [DONE]\n\n"
#: a comment line: the client's event-source parser skips it, proxies see traffic
KEEP_ALIVE = b": keep-alive\n\n"


@dataclass
class Segment:
    """The translation of one stream: which parts are open, and whether it has ended.

    ``parked_before``: a ``turn.waiting`` at an index below it is a park the turn has
    already moved on from (a replay of the whole turn passes it); one at or above it ends
    the segment, as the turn waits there now.
    """

    session_id: str
    turn_id: str
    parked_before: int = 0
    ended: bool = False
    step_open: bool = False
    #: the open text and reasoning parts' ids (the index of the event that opened them)
    text: str | None = None
    reasoning: str | None = None
    #: calls whose input was announced in this segment or an earlier one of the turn
    calls: set[str] = field(default_factory=set)

    def begin(self) -> list[Chunk]:
        """``start``: the turn's message, with the session it lives in as metadata."""
        metadata = {"sessionId": self.session_id, "turnId": self.turn_id}
        start = {"type": "start", "messageId": message_id(self.session_id, self.turn_id)}
        return [{**start, "messageMetadata": metadata}]

    def translate(self, event: SessionEvent) -> list[Chunk]:
        """The chunks of one event of the turn (after ``begin``)."""
        if event.data.node_id is not None:
            # a subagent's events are its own session's: shown as data, not in the message
            return [_data(event)]
        return list(self._chunks(event))

    def _chunks(self, event: SessionEvent) -> Iterator[Chunk]:
        match event:
            case StepStarted():
                yield from self._close_step()
                self.step_open = True
                yield {"type": "start-step"}
            case ReasoningAppended(data=data):
                yield from self._step()
                yield from self._close_text()
                if self.reasoning is None:
                    self.reasoning = f"reasoning_{event.meta.index}"
                    yield {"type": "reasoning-start", "id": self.reasoning}
                yield {
                    "type": "reasoning-delta",
                    "id": self.reasoning,
                    "delta": data.reasoning_delta,
                }
            case MessageAppended(data=data):
                yield from self._step()
                yield from self._close_reasoning()
                if self.text is None:
                    self.text = f"text_{event.meta.index}"
                    yield {"type": "text-start", "id": self.text}
                yield {"type": "text-delta", "id": self.text, "delta": data.message_delta}
            case MessageCompleted():
                yield from self._close_parts()
            case ModelRetrying() | ModelFallback():
                # the UI message cannot take back streamed text: the part ends where the
                # failed call stopped, and the retry's text is a part of its own
                yield from self._close_parts()
                yield _data(event)
            case StepCompleted():
                yield from self._close_step()
            case _:
                yield from self._tool_chunks(event)

    def _tool_chunks(self, event: SessionEvent) -> Iterator[Chunk]:
        match event:
            case ActionsRequested(data=data):
                yield from self._step()
                yield from self._close_parts()
                for action in data.actions:
                    yield from self._call(action.call_id, action.name, action.input)
            case InputRequested(data=data):
                yield from self._requested(event, data.requests)
            case ActionPartial(data=data) if data.call_id in self.calls:
                yield from self._step()
                output = {"toolCallId": data.call_id, "output": data.partial}
                yield {"type": "tool-output-available", **output, "preliminary": True}
            case ActionResult(data=data) if data.call_id in self.calls:
                yield from self._step()
                yield _result(data.call_id, data.status, data.output)
            case _:
                yield from self._end_chunks(event)

    def _end_chunks(self, event: SessionEvent) -> Iterator[Chunk]:
        match event:
            case TurnCompleted(data=data):
                yield from self._close_step()
                if data.output is not None:
                    yield {"type": "data-output", "id": self.turn_id, "data": data.output}
                yield self._finish(_FINISH[data.stop_reason])
            case TurnFailed(data=data):
                yield from self._close_step()
                yield {"type": "error", "errorText": data.error}
                yield self._finish("error")
            case TurnCancelled(data=data):
                yield from self._close_parts()
                self.ended = True
                yield {"type": "abort", "reason": data.reason}
            case TurnWaiting() if event.meta.index >= self.parked_before:
                yield from self._close_step()
                yield self._finish("tool-calls")
            case _:
                yield _data(event)

    def _requested(self, event: SessionEvent, requests: list[InputRequest]) -> Iterator[Chunk]:
        """A call's approval as the protocol asks it; a question or a session limit (which
        the protocol has no word for, answered through eve's API) as data."""
        if not all(self._approval(request) for request in requests):
            yield _data(event)
        for request in requests:
            if isinstance(request, ToolApprovalRequest) and self._approval(request):
                yield {
                    "type": "tool-approval-request",
                    "approvalId": request.request_id,
                    "toolCallId": request.call_id,
                }

    def _approval(self, request: InputRequest) -> bool:
        return isinstance(request, ToolApprovalRequest) and request.call_id in self.calls

    def _call(self, call_id: str, name: str, data: dict[str, Any]) -> Iterator[Chunk]:
        self.calls.add(call_id)
        call = {"toolCallId": call_id, "toolName": name}
        yield {"type": "tool-input-start", **call}
        yield {
            "type": "tool-input-delta",
            "toolCallId": call_id,
            "inputTextDelta": json.dumps(data),
        }
        yield {"type": "tool-input-available", **call, "input": data}

    def _step(self) -> Iterator[Chunk]:
        """A step opened where eve's has none in this segment: a parked step that goes on."""
        if not self.step_open:
            self.step_open = True
            yield {"type": "start-step"}

    def _close_text(self) -> Iterator[Chunk]:
        if self.text is not None:
            yield {"type": "text-end", "id": self.text}
            self.text = None

    def _close_reasoning(self) -> Iterator[Chunk]:
        if self.reasoning is not None:
            yield {"type": "reasoning-end", "id": self.reasoning}
            self.reasoning = None

    def _close_parts(self) -> Iterator[Chunk]:
        yield from self._close_reasoning()
        yield from self._close_text()

    def _close_step(self) -> Iterator[Chunk]:
        yield from self._close_parts()
        if self.step_open:
            self.step_open = False
            yield {"type": "finish-step"}

    def _finish(self, reason: FinishReason) -> Chunk:
        self.ended = True
        return {"type": "finish", "finishReason": reason}


def _result(call_id: str, status: ResultStatus, output: str) -> Chunk:
    match status:
        case "completed":
            return {"type": "tool-output-available", "toolCallId": call_id, "output": output}
        case "failed":
            return {"type": "tool-output-error", "toolCallId": call_id, "errorText": output}
        case "rejected":
            return {"type": "tool-output-denied", "toolCallId": call_id}
        case _:
            assert_never(status)


def _data(event: Event) -> Chunk:
    """An event beyond the vocabulary, whole, for the client's ``onData``."""
    body = {"type": event.type, "data": msgspec.to_builtins(event.data)}
    return {"type": "data-eve", "id": event.meta.id, "data": body, "transient": True}
