"""Claude's streamed Messages API events as eve model events, and the parts the history keeps.

The SDK parses the server-sent events; :class:`AnthropicTranslator` checks that the raw
events keep the Messages protocol (block indexes, closed blocks, a stop reason that agrees
with the content) and turns them into ``ModelEvent`` values: deltas to show the response as
it streams, and at each ``content_block_stop`` the part the history records for the block,
verbatim (``PartCompleted``; ``ToolCallEnd`` for a ``tool_use``):

* ``text`` → ``TextPart``; text with citations → ``ProviderPart`` (the block with its
  citations, readable as its text);
* ``thinking`` → ``ReasoningPart`` with its signature; ``redacted_thinking`` →
  ``ReasoningPart(redacted=True)`` with its data as ``payload``;
* any other block (``server_tool_use``, ``web_search_tool_result`` and the other server tool
  results) → ``ProviderPart`` holding the block as the API sent it.

:func:`translate_anthropic_events` runs the same translator over events already received.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from anthropic import types as sdk

from eve.errors import ModelConnectionError
from eve.messages import ProviderPart, ReasoningPart, TextPart
from eve.models._tool_input import parse_tool_input, protocol_error
from eve.models.events import (
    Done,
    ModelEvent,
    PartCompleted,
    ReasoningDelta,
    StopReason,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

PROVIDER = "anthropic"

# pause_turn is continued by the adapter before the loop sees it; reasons newer than this
# table become "other".
STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
}


@dataclass
class _Block:
    kind: str
    #: the block as content_block_start sent it (what a provider block starts from)
    start: dict[str, Any] = field(default_factory=dict)
    call_id: str = ""
    name: str = ""
    json_parts: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    signature: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)
    open: bool = True


class AnthropicTranslator:
    """Checks one message stream, event by event, and turns it into eve events."""

    def __init__(self) -> None:
        self._started = False
        self._done = False
        self._blocks: list[_Block] = []
        self._usage = TokenUsage()
        #: the API's own stop reason (``pause_turn`` included), once message_delta said it
        self.stop_reason: str | None = None

    def feed(self, event: sdk.RawMessageStreamEvent) -> list[ModelEvent]:
        if self._done:
            raise protocol_error(PROVIDER, f"{event.type} after message_stop")
        if isinstance(event, sdk.RawMessageStartEvent):
            return self._message_start(event)
        if not self._started:
            raise protocol_error(PROVIDER, f"{event.type} before message_start")
        if isinstance(event, sdk.RawContentBlockStartEvent):
            return self._block_start(event)
        if isinstance(event, sdk.RawContentBlockDeltaEvent):
            return self._block_delta(event)
        if isinstance(event, sdk.RawContentBlockStopEvent):
            return self._block_stop(event)
        if isinstance(event, sdk.RawMessageDeltaEvent):
            if event.delta.stop_reason is not None:
                self.stop_reason = event.delta.stop_reason
            self._usage = _usage(event.usage, self._usage)
            return []
        if isinstance(event, sdk.RawMessageStopEvent):
            return [self._message_stop()]
        return []

    def finish(self) -> list[ModelEvent]:
        """The stream ended; without message_stop the response is incomplete."""
        if not self._done:
            raise ModelConnectionError(
                f"{PROVIDER}: the stream ended before the response was complete "
                "(no message_stop); the connection was probably cut off",
                provider=PROVIDER,
            )
        return []

    def _message_start(self, event: sdk.RawMessageStartEvent) -> list[ModelEvent]:
        if self._started:
            raise protocol_error(PROVIDER, "a second message_start in one stream")
        self._started = True
        self._usage = _usage(event.message.usage, TokenUsage())
        return []

    def _block_start(self, event: sdk.RawContentBlockStartEvent) -> list[ModelEvent]:
        expected = len(self._blocks)
        if event.index < expected:
            raise protocol_error(
                PROVIDER, f"content_block_start for index {event.index}, which was already started"
            )
        if event.index > expected:
            raise protocol_error(
                PROVIDER,
                f"content_block_start for index {event.index} out of order (expected {expected})",
            )
        block = event.content_block
        start = block.to_dict(mode="json")
        if isinstance(block, sdk.ToolUseBlock | sdk.ServerToolUseBlock):
            self._blocks.append(_Block(block.type, start, call_id=block.id, name=block.name))
            if isinstance(block, sdk.ServerToolUseBlock):
                return []  # the provider runs its own tools; the loop never runs them
            return [ToolCallStart(id=block.id, name=block.name)]
        self._blocks.append(_Block(block.type, start))
        if isinstance(block, sdk.TextBlock) and block.text:
            self._blocks[-1].text.append(block.text)
            return [TextDelta(text=block.text)]
        if isinstance(block, sdk.ThinkingBlock):
            self._blocks[-1].text.append(block.thinking)
            self._blocks[-1].signature = block.signature
        return []

    def _open_block(self, index: int, what: str) -> _Block:
        if not 0 <= index < len(self._blocks):
            raise protocol_error(PROVIDER, f"{what} for index {index}, which was never started")
        block = self._blocks[index]
        if not block.open:
            raise protocol_error(PROVIDER, f"{what} for index {index}, which was already stopped")
        return block

    def _block_delta(self, event: sdk.RawContentBlockDeltaEvent) -> list[ModelEvent]:
        block = self._open_block(event.index, f"{event.delta.type} content_block_delta")
        delta = event.delta
        if isinstance(delta, sdk.TextDelta):
            self._expect(block, ("text",), event)
            block.text.append(delta.text)
            return [TextDelta(text=delta.text)] if delta.text else []
        if isinstance(delta, sdk.CitationsDelta):
            self._expect(block, ("text",), event)
            block.citations.append(delta.citation.to_dict(mode="json"))
            return []
        if isinstance(delta, sdk.ThinkingDelta):
            self._expect(block, ("thinking",), event)
            block.text.append(delta.thinking)
            return [ReasoningDelta(text=delta.thinking)] if delta.thinking else []
        if isinstance(delta, sdk.SignatureDelta):
            self._expect(block, ("thinking",), event)
            block.signature += delta.signature
            return []
        if isinstance(delta, sdk.InputJSONDelta):
            self._expect(block, ("tool_use", "server_tool_use"), event)
            block.json_parts.append(delta.partial_json)
            if block.kind == "server_tool_use" or not delta.partial_json:
                return []
            return [ToolCallDelta(id=block.call_id, json_delta=delta.partial_json)]
        return []

    @staticmethod
    def _expect(
        block: _Block, kinds: tuple[str, ...], event: sdk.RawContentBlockDeltaEvent
    ) -> None:
        if block.kind not in kinds:
            raise protocol_error(
                PROVIDER,
                f"{event.delta.type} for index {event.index}, which is a {block.kind} block",
            )

    def _block_stop(self, event: sdk.RawContentBlockStopEvent) -> list[ModelEvent]:
        block = self._open_block(event.index, "content_block_stop")
        block.open = False
        if block.kind == "tool_use":
            data = parse_tool_input(PROVIDER, block.name, "".join(block.json_parts))
            return [ToolCallEnd(id=block.call_id, name=block.name, input=data)]
        part = _part(block)
        return [PartCompleted(part=part)] if part is not None else []

    def _message_stop(self) -> Done:
        still_open = [i for i, b in enumerate(self._blocks) if b.open]
        if still_open:
            raise protocol_error(PROVIDER, f"message_stop with block(s) {still_open} still open")
        reason = self.stop_reason
        if reason is None:
            raise protocol_error(PROVIDER, "message_stop without a stop_reason")
        calls = sum(b.kind == "tool_use" for b in self._blocks)
        if reason == "tool_use" and not calls:
            raise protocol_error(PROVIDER, "stop_reason tool_use, but no tool_use block was sent")
        if reason == "end_turn" and calls:
            raise protocol_error(PROVIDER, f"stop_reason end_turn with {calls} tool_use block(s)")
        self._done = True
        stop = STOP_REASONS.get(reason)
        if stop is None:  # a reason eve has no word for (pause_turn): kept for the adapter
            return Done(stop_reason="other", usage=self._usage, provider_stop_reason=reason)
        return Done(stop_reason=stop, usage=self._usage)


def _usage(usage: sdk.Usage | sdk.MessageDeltaUsage, before: TokenUsage) -> TokenUsage:
    """The usage so far: message_delta's counts are cumulative and may leave input out."""

    def pick(value: int | None, old: int) -> int:
        return old if value is None else value

    return TokenUsage(
        input_tokens=pick(usage.input_tokens, before.input_tokens),
        output_tokens=usage.output_tokens,
        cache_read_tokens=pick(usage.cache_read_input_tokens, before.cache_read_tokens),
        cache_write_tokens=pick(usage.cache_creation_input_tokens, before.cache_write_tokens),
    )


def _part(block: _Block) -> TextPart | ReasoningPart | ProviderPart | None:
    text = "".join(block.text)
    match block.kind:
        case "text" if block.citations:
            cited = {"type": "text", "text": text, "citations": block.citations}
            return ProviderPart(provider=PROVIDER, block=cited, text=text, answer=True)
        case "text":
            return TextPart(text=text) if text else None  # the API rejects empty text back
        case "thinking":
            return ReasoningPart(provider=PROVIDER, text=text, signature=block.signature or None)
        case "redacted_thinking":
            payload = str(block.start.get("data", ""))
            return ReasoningPart(provider=PROVIDER, redacted=True, payload=payload)
        case "server_tool_use":
            raw = "".join(block.json_parts)
            data = parse_tool_input(PROVIDER, block.name, raw) if raw else block.start["input"]
            whole = {**block.start, "input": data}
            readable = f"[{block.name} {json.dumps(data, sort_keys=True)}]"
            return ProviderPart(provider=PROVIDER, block=whole, text=readable)
        case _:
            return ProviderPart(provider=PROVIDER, block=block.start, text=_readable(block.start))


def _readable(block: dict[str, Any]) -> str:
    """What another provider may read of a server tool's result: the pages it found."""
    content = block.get("content")
    if not isinstance(content, list):
        return ""
    found = [
        f"{item.get('title', '')} ({item['url']})"
        for item in content
        if isinstance(item, dict) and isinstance(item.get("url"), str)
    ]
    return "\n".join(found)


def translate_anthropic_events(events: Iterable[sdk.RawMessageStreamEvent]) -> Iterator[ModelEvent]:
    """The eve events for a complete list of raw SDK stream events."""
    translator = AnthropicTranslator()
    for event in events:
        yield from translator.feed(event)
    yield from translator.finish()
