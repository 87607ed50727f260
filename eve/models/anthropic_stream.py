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
  results, ``mcp_tool_use``, ``compaction`` and types newer than eve) → ``ProviderPart``
  holding the block as the API sent it, with what its deltas added (a delta type eve does
  not know appends its strings to the block's fields of the same name), so it goes back
  verbatim;
* a ``tool_use`` whose input came whole in ``content_block_start`` (no ``input_json_delta``)
  keeps that input.

:func:`translate_anthropic_events` runs the same translator over events already received.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

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
    #: the block as content_block_start sent it, with what unknown deltas added to it
    start: dict[str, Any] = field(default_factory=dict)
    call_id: str = ""
    name: str = ""
    json_parts: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    signature: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)
    open: bool = True

    def input(self) -> dict[str, Any]:
        """A tool block's input: the streamed JSON, else the input the start held whole (some
        gateways and block types send it there and no delta)."""
        raw = "".join(self.json_parts)
        if raw.strip():
            return parse_tool_input(PROVIDER, self.name, raw)
        whole = self.start.get("input")
        return dict(whole) if isinstance(whole, dict) else {}


def _raw(value: object) -> dict[str, Any]:
    """An SDK object as the JSON the API sent. The SDK builds events without validating
    them and reads an unknown type as some known one (a ``compaction`` block as a
    ``TextBlock``, an unknown event as ``message_start``), so eve reads the JSON and
    dispatches on its ``type`` string."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_unset=True, warnings=False)
    return value if isinstance(value, dict) else {}


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


class AnthropicTranslator:
    """Checks one message stream, event by event, and turns it into eve events."""

    def __init__(self) -> None:
        self._started = False
        self._done = False
        self._blocks: list[_Block] = []
        self._usage = TokenUsage()
        #: the API's own stop reason (``pause_turn`` included), once message_delta said it
        self.stop_reason: str | None = None

    def feed(self, event: object) -> list[ModelEvent]:
        data = _raw(event)
        kind = _str(data.get("type"))
        if self._done:
            raise protocol_error(PROVIDER, f"{kind} after message_stop")
        if kind == "message_start":
            return self._message_start(_raw(data.get("message")))
        if kind in ("ping", "") or kind not in _MESSAGE_EVENTS:
            return []  # "ping" and event types newer than eve: nothing to read
        if not self._started:
            raise protocol_error(PROVIDER, f"{kind} before message_start")
        index = data.get("index")
        match kind:
            case "content_block_start":
                return self._block_start(index, _raw(data.get("content_block")))
            case "content_block_delta":
                return self._block_delta(index, _raw(data.get("delta")))
            case "content_block_stop":
                return self._block_stop(index)
            case "message_delta":
                reason = _raw(data.get("delta")).get("stop_reason")
                if isinstance(reason, str):
                    self.stop_reason = reason
                self._usage = _usage(_raw(data.get("usage")), self._usage)
                return []
            case _:
                return [self._message_stop()]

    def finish(self) -> list[ModelEvent]:
        """The stream ended; without message_stop the response is incomplete."""
        if not self._done:
            raise ModelConnectionError(
                f"{PROVIDER}: the stream ended before the response was complete "
                "(no message_stop); the connection was probably cut off",
                provider=PROVIDER,
            )
        return []

    def _message_start(self, message: dict[str, Any]) -> list[ModelEvent]:
        if self._started:
            raise protocol_error(PROVIDER, "a second message_start in one stream")
        self._started = True
        self._usage = _usage(_raw(message.get("usage")), TokenUsage())
        return []

    def _block_start(self, index: object, block: dict[str, Any]) -> list[ModelEvent]:
        expected = len(self._blocks)
        if not isinstance(index, int) or index < expected:
            raise protocol_error(
                PROVIDER, f"content_block_start for index {index}, which was already started"
            )
        if index > expected:
            raise protocol_error(
                PROVIDER,
                f"content_block_start for index {index} out of order (expected {expected})",
            )
        kind = _str(block.get("type"))
        started = _Block(kind, block)
        self._blocks.append(started)
        out: list[ModelEvent] = []
        if kind.endswith("tool_use"):
            started.call_id, started.name = _str(block.get("id")), _str(block.get("name"))
            if kind != "tool_use":
                return []  # server and MCP tools run at the provider; the loop never runs them
            out.append(ToolCallStart(id=started.call_id, name=started.name))
            whole = block.get("input")
            if isinstance(whole, dict) and whole:
                out.append(ToolCallDelta(id=started.call_id, json_delta=json.dumps(whole)))
        elif kind == "text" and (text := _str(block.get("text"))):
            started.text.append(text)
            out.append(TextDelta(text=text))
        elif kind == "thinking":
            started.text.append(_str(block.get("thinking")))
            started.signature = _str(block.get("signature"))
        return out

    def _open_block(self, index: object, what: str) -> _Block:
        if not isinstance(index, int) or not 0 <= index < len(self._blocks):
            raise protocol_error(PROVIDER, f"{what} for index {index}, which was never started")
        block = self._blocks[index]
        if not block.open:
            raise protocol_error(PROVIDER, f"{what} for index {index}, which was already stopped")
        return block

    def _block_delta(self, index: object, delta: dict[str, Any]) -> list[ModelEvent]:
        kind = _str(delta.get("type"))
        block = self._open_block(index, f"{kind} content_block_delta")
        match kind:
            case "text_delta":
                self._expect(block, ("text",), kind, index)
                text = _str(delta.get("text"))
                block.text.append(text)
                return [TextDelta(text=text)] if text else []
            case "citations_delta":
                self._expect(block, ("text",), kind, index)
                block.citations.append(_raw(delta.get("citation")))
                return []
            case "thinking_delta":
                self._expect(block, ("thinking",), kind, index)
                thinking = _str(delta.get("thinking"))
                block.text.append(thinking)
                return [ReasoningDelta(text=thinking)] if thinking else []
            case "signature_delta":
                self._expect(block, ("thinking",), kind, index)
                block.signature += _str(delta.get("signature"))
                return []
            case "input_json_delta":
                if not block.call_id and block.kind != "tool_use":
                    self._expect(block, ("tool_use", "server_tool_use"), kind, index)
                piece = _str(delta.get("partial_json"))
                block.json_parts.append(piece)
                if block.kind != "tool_use" or not piece:
                    return []
                return [ToolCallDelta(id=block.call_id, json_delta=piece)]
            case _:
                _merge(block.start, delta)
                return []

    @staticmethod
    def _expect(block: _Block, kinds: tuple[str, ...], delta: str, index: object) -> None:
        if block.kind not in kinds:
            raise protocol_error(
                PROVIDER, f"{delta} for index {index}, which is a {block.kind} block"
            )

    def _block_stop(self, index: object) -> list[ModelEvent]:
        block = self._open_block(index, "content_block_stop")
        block.open = False
        if block.kind == "tool_use":
            return [ToolCallEnd(id=block.call_id, name=block.name, input=block.input())]
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


_MESSAGE_EVENTS = frozenset(
    {"content_block_start", "content_block_delta", "content_block_stop", "message_delta"}
    | {"message_stop"}
)


def _merge(block: dict[str, Any], delta: dict[str, Any]) -> None:
    """A delta of a type eve does not know, into its block: the Messages API's deltas add
    text to a field of their block (``text_delta.text`` to ``text``, ``compaction_delta``'s
    ``content`` to ``content``), so a string is appended and any other value set."""
    for key, value in delta.items():
        if key == "type":
            continue
        before = block.get(key)
        block[key] = before + value if isinstance(value, str) and isinstance(before, str) else value


def _usage(usage: dict[str, Any], before: TokenUsage) -> TokenUsage:
    """The usage so far: message_delta's counts are cumulative and may leave input out."""

    def pick(key: str, old: int) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else old

    return TokenUsage(
        input_tokens=pick("input_tokens", before.input_tokens),
        output_tokens=pick("output_tokens", before.output_tokens),
        cache_read_tokens=pick("cache_read_input_tokens", before.cache_read_tokens),
        cache_write_tokens=pick("cache_creation_input_tokens", before.cache_write_tokens),
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
        case kind if kind.endswith("tool_use"):  # server and MCP tools: run by the provider
            data = block.input()
            whole = {**block.start, "input": data}
            readable = f"[{block.name} {json.dumps(data, sort_keys=True)}]"
            return ProviderPart(provider=PROVIDER, block=whole, text=readable)
        case _:
            return ProviderPart(provider=PROVIDER, block=block.start, text=_readable(block.start))


def _readable(block: dict[str, Any]) -> str:
    """What another provider may read of a server tool's result: the pages it found."""
    content = block.get("content")
    if isinstance(content, str):
        return content  # a compaction block's summary of the conversation before it
    if not isinstance(content, list):
        return ""
    found = [
        f"{item.get('title', '')} ({item['url']})"
        for item in content
        if isinstance(item, dict) and isinstance(item.get("url"), str)
    ]
    return "\n".join(found)


def translate_anthropic_events(events: Iterable[object]) -> Iterator[ModelEvent]:
    """The eve events for a complete list of raw SDK stream events."""
    translator = AnthropicTranslator()
    for event in events:
        yield from translator.feed(event)
    yield from translator.finish()
