"""Translate a ConverseStream stream (each item one event, ``{"contentBlockDelta": {...}}``, as
``boto3`` yields it) into eve model events.

The events ("ConverseStreamOutput", API reference,
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html):
``messageStart``; per content block, an optional ``contentBlockStart`` (a ``toolUse`` block
names its call there), ``contentBlockDelta``s (``text``, ``toolUse.input`` JSON pieces, or
``reasoningContent``: ``text``, then its ``signature``, or ``redactedContent`` bytes) and a
``contentBlockStop``; then ``messageStop`` with the ``stopReason`` and ``metadata`` with the
usage, in either order. Each completed block is recorded as ``bedrock_request`` sends it
back: text as ``TextPart``, reasoning as ``ReasoningPart`` with its signature (redacted
reasoning with the bytes as base64 in ``payload``), a call as ``ToolCallEnd``. Deltas of
kinds eve has no part for (``citation``, ``image``) are shown nowhere and not kept.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from eve.errors import ModelConnectionError
from eve.messages import ReasoningPart, StopReason, TextPart
from eve.models._tool_input import parse_tool_input, protocol_error
from eve.models.bedrock_request import PROVIDER
from eve.models.events import (
    Done,
    ModelEvent,
    PartCompleted,
    ReasoningDelta,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

# The API's StopReason values in eve's words: a guardrail or a content filter is a refusal; a
# context window that filled up cut the answer like max_tokens; a malformed answer is other.
_STOPS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "guardrail_intervened": "refusal",
    "content_filtered": "refusal",
    "model_context_window_exceeded": "max_tokens",
}


def stop_reason(reason: str, *, called: bool) -> StopReason:
    """eve's stop reason for the API's ``stopReason`` (``end_turn`` with calls: ``tool_use``,
    as some models on Bedrock end a tool-calling answer)."""
    if reason == "end_turn" and called:
        return "tool_use"
    return _STOPS.get(reason, "other")


def usage_of(usage: dict[str, Any]) -> TokenUsage:
    """eve's usage from ``metadata.usage`` (``TokenUsage``: ``inputTokens`` leaves out the
    tokens read from or written to the cache, which come apart)."""
    return TokenUsage(
        input_tokens=int(usage.get("inputTokens") or 0),
        output_tokens=int(usage.get("outputTokens") or 0),
        cache_read_tokens=int(usage.get("cacheReadInputTokens") or 0),
        cache_write_tokens=int(usage.get("cacheWriteInputTokens") or 0),
    )


@dataclass
class _Block:
    """One content block being streamed."""

    kind: str  # text, reasoning or tool
    pieces: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    signature: str | None = None
    redacted: list[bytes] = field(default_factory=list)


class BedrockTranslator:
    """Feed it each event (a dict as ``boto3`` yields it), then ``finish()``."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._calls = 0
        self._stop: str | None = None
        self._usage = TokenUsage()

    def feed(self, event: dict[str, Any]) -> list[ModelEvent]:
        if not isinstance(event, dict):
            raise protocol_error(PROVIDER, f"a stream event is a {type(event).__name__}")
        out: list[ModelEvent] = []
        for name, body in event.items():
            out.extend(self._event(name, body if isinstance(body, dict) else {}))
        return out

    def _event(self, name: str, body: dict[str, Any]) -> list[ModelEvent]:
        match name:
            case "contentBlockStart":
                return self._start(_index(body), body.get("start") or {})
            case "contentBlockDelta":
                return self._delta(_index(body), body.get("delta") or {})
            case "contentBlockStop":
                return self._close(_index(body))
            case "messageStop":
                self._stop = str(body.get("stopReason") or "")
            case "metadata":
                if isinstance(usage := body.get("usage"), dict):
                    self._usage = usage_of(usage)
        return []  # messageStart, and members a newer API adds

    def _start(self, index: int, start: dict[str, Any]) -> list[ModelEvent]:
        if index in self._blocks:
            raise protocol_error(PROVIDER, f"content block {index} started twice")
        use = start.get("toolUse")
        if not isinstance(use, dict):
            return []  # a block of a kind eve keeps nothing of (an image, a tool result)
        call_id, name = str(use.get("toolUseId") or ""), str(use.get("name") or "")
        if not call_id or not name:
            raise protocol_error(PROVIDER, f"tool use block {index} has no id or no name")
        self._blocks[index] = _Block(kind="tool", call_id=call_id, name=name)
        return [ToolCallStart(id=call_id, name=name)]

    def _delta(self, index: int, delta: dict[str, Any]) -> list[ModelEvent]:
        if "text" in delta:
            block = self._open(index, "text")
            text = str(delta["text"])
            block.pieces.append(text)
            return [TextDelta(text=text)] if text else []
        if isinstance(use := delta.get("toolUse"), dict):
            call = self._blocks.get(index)
            if call is None or call.kind != "tool":
                raise protocol_error(PROVIDER, f"tool input for block {index}, not a tool use")
            piece = str(use.get("input") or "")
            call.pieces.append(piece)
            return [ToolCallDelta(id=call.call_id, json_delta=piece)] if piece else []
        if isinstance(reasoning := delta.get("reasoningContent"), dict):
            return self._reasoning(self._open(index, "reasoning"), reasoning)
        return []

    def _reasoning(self, block: _Block, delta: dict[str, Any]) -> list[ModelEvent]:
        if isinstance(delta.get("signature"), str):
            block.signature = (block.signature or "") + delta["signature"]
        if isinstance(delta.get("redactedContent"), bytes | bytearray):
            block.redacted.append(bytes(delta["redactedContent"]))
        text = delta.get("text")
        if isinstance(text, str) and text:
            block.pieces.append(text)
            return [ReasoningDelta(text=text)]
        return []

    def _open(self, index: int, kind: str) -> _Block:
        block = self._blocks.setdefault(index, _Block(kind=kind))
        if block.kind != kind:
            raise protocol_error(PROVIDER, f"a {kind} delta for block {index}, a {block.kind}")
        return block

    def _close(self, index: int) -> list[ModelEvent]:
        block = self._blocks.pop(index, None)
        if block is None:
            return []  # a block of a kind eve keeps nothing of, or an empty one
        text = "".join(block.pieces)
        match block.kind:
            case "tool":
                self._calls += 1
                arguments = parse_tool_input(PROVIDER, block.name, text)
                return [ToolCallEnd(id=block.call_id, name=block.name, input=arguments)]
            case "reasoning":
                return [PartCompleted(part=_reasoning_part(block, text))]
            case _:
                return [PartCompleted(part=TextPart(text=text))] if text else []

    def finish(self) -> list[ModelEvent]:
        """The stream ended: blocks left open, then ``Done``."""
        if self._stop is None:
            raise ModelConnectionError(
                f"{PROVIDER}: the stream ended before the response was complete (no "
                "messageStop); the connection was probably cut off",
                provider=PROVIDER,
            )
        out: list[ModelEvent] = []
        for index in sorted(self._blocks):
            out.extend(self._close(index))
        reason = stop_reason(self._stop, called=self._calls > 0)
        provider_reason = None if reason in ("end_turn", "tool_use") else self._stop
        done = Done(stop_reason=reason, usage=self._usage, provider_stop_reason=provider_reason)
        return [*out, done]


def _index(body: dict[str, Any]) -> int:
    index = body.get("contentBlockIndex")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise protocol_error(PROVIDER, f"a content block event has no index ({index!r})")
    return index


def _reasoning_part(block: _Block, text: str) -> ReasoningPart:
    if block.redacted:
        payload = base64.b64encode(b"".join(block.redacted)).decode("ascii")
        return ReasoningPart(provider=PROVIDER, redacted=True, payload=payload)
    return ReasoningPart(provider=PROVIDER, text=text, signature=block.signature)


def translate_bedrock_events(events: Iterable[dict[str, Any]]) -> Iterator[ModelEvent]:
    """The eve events for a complete list of stream events (a recorded stream, for replay)."""
    translator = BedrockTranslator()
    for event in events:
        yield from translator.feed(event)
    yield from translator.finish()
