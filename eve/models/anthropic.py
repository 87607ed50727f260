"""Stream Claude responses through the official ``anthropic`` SDK as eve model events.

The SDK parses the server-sent events; :class:`AnthropicTranslator` checks that the raw
events keep the Messages protocol (block indexes, closed blocks, a stop reason that agrees
with the content) and turns them into ``ModelEvent`` values. :func:`translate_anthropic_events`
runs the same translator over events already received, for tests and replays.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

import anthropic
import httpx2
from anthropic import types as sdk

from eve.errors import ModelConnectionError, ModelCredentialsMissing
from eve.messages import Message, ToolResultMessage, UserMessage
from eve.models._http_errors import connection_error, describe, provider_error, status_error
from eve.models._streaming import SDKModel
from eve.models._tool_input import parse_tool_input, protocol_error
from eve.models.base import ModelRequest
from eve.models.events import (
    Done,
    ModelEvent,
    ReasoningDelta,
    StopReason,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

PROVIDER = "anthropic"
API_KEY_ENV = "ANTHROPIC_API_KEY"

# pause_turn (a server tool still running) and reasons newer than this table become "other".
_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
}

# Thinking tokens count toward max_tokens, so the budget is added on top of the output limit.
_THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}

# An error event inside a 200 stream names only its type; these are the statuses the same
# error has as a plain response, so callers can treat both alike.
_STREAM_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


@dataclass
class _Block:
    kind: str
    call_id: str = ""
    name: str = ""
    json_parts: list[str] = field(default_factory=list)
    open: bool = True


class AnthropicTranslator:
    """Checks one message stream, event by event, and turns it into eve events."""

    def __init__(self) -> None:
        self._started = False
        self._done = False
        self._blocks: list[_Block] = []
        self._stop_reason: str | None = None
        self._usage = TokenUsage()

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
                self._stop_reason = event.delta.stop_reason
            self._usage = TokenUsage(
                input_tokens=self._usage.input_tokens, output_tokens=event.usage.output_tokens
            )
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
        usage = event.message.usage
        # Cached prompt tokens are still prompt tokens; eve counts what the context held.
        prompt = (
            usage.input_tokens
            + (usage.cache_creation_input_tokens or 0)
            + (usage.cache_read_input_tokens or 0)
        )
        self._usage = TokenUsage(input_tokens=prompt, output_tokens=usage.output_tokens)
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
        if isinstance(block, sdk.ToolUseBlock):
            self._blocks.append(_Block(block.type, call_id=block.id, name=block.name))
            return [ToolCallStart(id=block.id, name=block.name)]
        self._blocks.append(_Block(block.type))
        if isinstance(block, sdk.TextBlock) and block.text:
            return [TextDelta(text=block.text)]
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
            self._expect(block, "text", event)
            return [TextDelta(text=delta.text)] if delta.text else []
        if isinstance(delta, sdk.ThinkingDelta):
            self._expect(block, "thinking", event)
            return [ReasoningDelta(text=delta.thinking)] if delta.thinking else []
        if isinstance(delta, sdk.InputJSONDelta):
            if block.kind == "server_tool_use":
                return []  # the provider runs its own tools; the loop never sees them
            self._expect(block, "tool_use", event)
            block.json_parts.append(delta.partial_json)
            if not delta.partial_json:
                return []
            return [ToolCallDelta(id=block.call_id, json_delta=delta.partial_json)]
        return []  # signatures and citations carry nothing eve records

    @staticmethod
    def _expect(block: _Block, kind: str, event: sdk.RawContentBlockDeltaEvent) -> None:
        if block.kind != kind:
            raise protocol_error(
                PROVIDER,
                f"{event.delta.type} for index {event.index}, which is a {block.kind} block",
            )

    def _block_stop(self, event: sdk.RawContentBlockStopEvent) -> list[ModelEvent]:
        block = self._open_block(event.index, "content_block_stop")
        block.open = False
        if block.kind != "tool_use":
            return []
        data = parse_tool_input(PROVIDER, block.name, "".join(block.json_parts))
        return [ToolCallEnd(id=block.call_id, name=block.name, input=data)]

    def _message_stop(self) -> Done:
        still_open = [i for i, b in enumerate(self._blocks) if b.open]
        if still_open:
            raise protocol_error(PROVIDER, f"message_stop with block(s) {still_open} still open")
        reason = self._stop_reason
        if reason is None:
            raise protocol_error(PROVIDER, "message_stop without a stop_reason")
        calls = sum(b.kind == "tool_use" for b in self._blocks)
        if reason == "tool_use" and not calls:
            raise protocol_error(PROVIDER, "stop_reason tool_use, but no tool_use block was sent")
        if reason == "end_turn" and calls:
            raise protocol_error(PROVIDER, f"stop_reason end_turn with {calls} tool_use block(s)")
        self._done = True
        return Done(stop_reason=_STOP_REASONS.get(reason, "other"), usage=self._usage)


def translate_anthropic_events(events: Iterable[sdk.RawMessageStreamEvent]) -> Iterator[ModelEvent]:
    """The eve events for a complete list of raw SDK stream events."""
    translator = AnthropicTranslator()
    for event in events:
        yield from translator.feed(event)
    yield from translator.finish()


def anthropic_messages(messages: list[Message]) -> list[sdk.MessageParam]:
    """Eve's history as Messages API turns; adjacent user-side messages share one turn."""
    turns: list[tuple[str, list[sdk.ContentBlockParam]]] = []
    for message in messages:
        role, blocks = _blocks_of(message)
        if not blocks:
            continue
        if turns and turns[-1][0] == role == "user":
            # Tool results must all sit in the one user turn after the tool_use turn.
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    return [
        sdk.UserMessageParam(role="user", content=blocks)
        if role == "user"
        else sdk.AssistantMessageParam(role="assistant", content=blocks)
        for role, blocks in turns
    ]


def _blocks_of(message: Message) -> tuple[str, list[sdk.ContentBlockParam]]:
    if isinstance(message, UserMessage):
        return "user", [sdk.TextBlockParam(type="text", text=message.text)]
    if isinstance(message, ToolResultMessage):
        result = sdk.ToolResultBlockParam(
            type="tool_result",
            tool_use_id=message.tool_call_id,
            content=message.content,
            is_error=message.is_error,
        )
        return "user", [result]
    blocks: list[sdk.ContentBlockParam] = []
    if message.text:
        blocks.append(sdk.TextBlockParam(type="text", text=message.text))
    blocks.extend(
        sdk.ToolUseBlockParam(type="tool_use", id=c.id, name=c.name, input=c.input)
        for c in message.tool_calls
    )
    return "assistant", blocks


def anthropic_tools(request: ModelRequest) -> list[sdk.ToolUnionParam]:
    """Eve's tools and this provider's own tools, as the Messages API declares them."""
    tools: list[sdk.ToolUnionParam] = [
        sdk.ToolParam(name=t.name, description=t.description, input_schema=t.input_schema)
        for t in request.tools
    ]
    tools.extend(
        # The provider validates its own tool configs; eve passes them through untouched.
        cast(sdk.ToolUnionParam, {"type": p.type, "name": p.name, **p.config})
        for p in request.provider_tools
        if p.provider == PROVIDER
    )
    return tools


def _thinking_budget(reasoning: str | None) -> int | None:
    if reasoning is None or reasoning == "none":
        return None
    return _THINKING_BUDGETS.get(reasoning, _THINKING_BUDGETS["medium"])


class AnthropicModel(SDKModel[anthropic.AsyncAnthropic]):
    """A ``ModelClient`` for ``anthropic/<model>``."""

    provider = PROVIDER

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 0,
    ) -> None:
        key = api_key or os.environ.get(API_KEY_ENV)
        if not key:
            raise ModelCredentialsMissing(
                f"{API_KEY_ENV} is not set: export it (or pass api_key=) to use {PROVIDER}/{model}",
                variable=API_KEY_ENV,
            )
        super().__init__(model, api_key=key, base_url=base_url, max_retries=max_retries)

    def _new_client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=self._api_key, base_url=self._base_url, max_retries=self._max_retries
        )

    def _translator(self) -> AnthropicTranslator:
        return AnthropicTranslator()

    async def _start(
        self, request: ModelRequest
    ) -> anthropic.AsyncStream[sdk.RawMessageStreamEvent]:
        budget = _thinking_budget(request.reasoning)
        tools = anthropic_tools(request)
        return await self._sdk().messages.create(
            model=self._model,
            max_tokens=request.max_output_tokens + (budget or 0),
            messages=anthropic_messages(request.messages),
            system=request.system or anthropic.omit,
            tools=tools or anthropic.omit,
            thinking=sdk.ThinkingConfigEnabledParam(type="enabled", budget_tokens=budget)
            if budget
            else anthropic.omit,
            stream=True,
        )

    @contextmanager
    def _sdk_errors(self) -> Iterator[None]:
        key = self._api_key
        try:
            yield
        except anthropic.APIStatusError as error:
            status = error.status_code
            if status < 400:  # an error event inside a streamed 200 response
                status = _STREAM_ERROR_STATUS.get(str(error.type), 500)
            detail = describe(error.body, error.message)
            headers = error.response.headers if error.status_code >= 400 else None
            raise status_error(PROVIDER, status, detail, secret=key, headers=headers) from error
        except (anthropic.APIConnectionError, httpx2.TransportError) as error:
            detail = str(error.__cause__ or error) or type(error).__name__
            raise connection_error(PROVIDER, detail, secret=key) from error
        except anthropic.APIError as error:
            detail = describe(error.body, error.message)
            raise provider_error(PROVIDER, detail, secret=key) from error
