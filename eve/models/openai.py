"""Stream Chat Completions through the official ``openai`` SDK as eve model events.

Any OpenAI-compatible server (llama.cpp, vLLM, Ollama …) works through ``base_url``; such a
server may need no key, so a placeholder is sent when none is set. :class:`OpenAITranslator`
assembles tool calls by ``index`` (id and name in a call's first chunk, its arguments split
over many) and checks the stream; :func:`translate_openai_chunks` runs the same translator
over chunks already received.

Chat Completions has no hosted tools, so provider tools are never sent: those declared for
``openai`` are skipped without error, like those of any other provider.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import urlsplit

import openai
from openai.types import chat as sdk
from openai.types.shared import ReasoningEffort

from eve.errors import ModelConnectionError, ModelCredentialsMissing
from eve.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
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

PROVIDER = "openai"
API_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
OFFICIAL_HOST = "api.openai.com"
#: sent to OpenAI-compatible servers that take no key, since the SDK refuses an empty one
PLACEHOLDER_KEY = "not-needed"

_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


@dataclass
class _Call:
    id: str
    name: str
    parts: list[str] = field(default_factory=list)


class OpenAITranslator:
    """Checks one chat completion stream, chunk by chunk, and turns it into eve events."""

    def __init__(self) -> None:
        self._calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._finish_reason: str | None = None
        self._refused = False
        self._usage = TokenUsage()

    def feed(self, chunk: sdk.ChatCompletionChunk) -> list[ModelEvent]:
        if chunk.usage is not None:
            self._usage = TokenUsage(
                input_tokens=chunk.usage.prompt_tokens,
                output_tokens=chunk.usage.completion_tokens,
            )
        out: list[ModelEvent] = []
        for choice in chunk.choices:
            if choice.index != 0:
                continue  # eve asks for one choice; others would be another answer
            out.extend(self._delta(choice.delta))
            if choice.finish_reason is not None:
                out.extend(self._finish_choice(choice.finish_reason))
        return out

    def finish(self) -> list[ModelEvent]:
        """The stream ended: the one ``Done``, or an error when no finish_reason came."""
        if self._finish_reason is None:
            raise ModelConnectionError(
                f"{PROVIDER}: the stream ended before the response was complete "
                "(no finish_reason); the connection was probably cut off",
                provider=PROVIDER,
            )
        return [Done(stop_reason=self._stop_reason(self._finish_reason), usage=self._usage)]

    def _delta(self, delta: sdk.chat_completion_chunk.ChoiceDelta) -> list[ModelEvent]:
        out: list[ModelEvent] = []
        # Compatible servers (vLLM, llama.cpp, DeepSeek) stream reasoning as an extra field.
        reasoning = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
        if isinstance(reasoning, str) and reasoning:
            out.append(ReasoningDelta(text=reasoning))
        if delta.content:
            out.append(TextDelta(text=delta.content))
        if delta.refusal:
            self._refused = True
            out.append(TextDelta(text=delta.refusal))
        for tool_delta in delta.tool_calls or []:
            out.extend(self._tool_delta(tool_delta))
        return out

    def _tool_delta(self, delta: sdk.chat_completion_chunk.ChoiceDeltaToolCall) -> list[ModelEvent]:
        if self._finish_reason is not None:
            raise protocol_error(PROVIDER, "a tool call delta after the finish_reason")
        out: list[ModelEvent] = []
        call = self._by_index.get(delta.index)
        name = delta.function.name if delta.function else None
        # Some compatible servers number every call 0, so a new id starts a new call.
        if call is None or (delta.id and delta.id != call.id):
            if not delta.id or not name:
                raise protocol_error(
                    PROVIDER,
                    f"tool call delta for index {delta.index}, which has no id and name yet",
                )
            call = _Call(delta.id, name)
            self._calls.append(call)
            self._by_index[delta.index] = call
            out.append(ToolCallStart(id=call.id, name=call.name))
        arguments = delta.function.arguments if delta.function else None
        if arguments:
            call.parts.append(arguments)
            out.append(ToolCallDelta(id=call.id, json_delta=arguments))
        return out

    def _finish_choice(self, reason: str) -> list[ModelEvent]:
        if self._finish_reason is not None:
            raise protocol_error(PROVIDER, "a second finish_reason in one stream")
        self._finish_reason = reason
        if reason == "tool_calls" and not self._calls:
            raise protocol_error(PROVIDER, "finish_reason tool_calls, but no tool call was sent")
        return [
            ToolCallEnd(
                id=c.id, name=c.name, input=parse_tool_input(PROVIDER, c.name, "".join(c.parts))
            )
            for c in self._calls
        ]

    def _stop_reason(self, reason: str) -> StopReason:
        mapped = _FINISH_REASONS.get(reason, "other")
        if mapped == "end_turn" and self._calls:
            return "tool_use"  # compatible servers that call tools but say "stop"
        if mapped == "end_turn" and self._refused:
            return "refusal"
        return mapped


def translate_openai_chunks(chunks: Iterable[sdk.ChatCompletionChunk]) -> Iterator[ModelEvent]:
    """The eve events for a complete list of SDK chat completion chunks."""
    translator = OpenAITranslator()
    for chunk in chunks:
        yield from translator.feed(chunk)
    yield from translator.finish()


def openai_messages(system: str, messages: list[Message]) -> list[sdk.ChatCompletionMessageParam]:
    """Eve's system prompt and history as Chat Completions messages."""
    out: list[sdk.ChatCompletionMessageParam] = []
    if system:
        out.append(sdk.ChatCompletionSystemMessageParam(role="system", content=system))
    for message in messages:
        if isinstance(message, UserMessage):
            out.append(sdk.ChatCompletionUserMessageParam(role="user", content=message.text))
        elif isinstance(message, ToolResultMessage):
            content = f"Error: {message.content}" if message.is_error else message.content
            out.append(
                sdk.ChatCompletionToolMessageParam(
                    role="tool", tool_call_id=message.tool_call_id, content=content
                )
            )
        elif message.text or message.tool_calls:
            out.append(_assistant(message))
    return out


def _assistant(message: AssistantMessage) -> sdk.ChatCompletionAssistantMessageParam:
    param = sdk.ChatCompletionAssistantMessageParam(role="assistant", content=message.text or None)
    if message.tool_calls:
        param["tool_calls"] = [
            sdk.ChatCompletionMessageFunctionToolCallParam(
                id=c.id,
                type="function",
                function={"name": c.name, "arguments": json.dumps(c.input)},
            )
            for c in message.tool_calls
        ]
    return param


def openai_tools(request: ModelRequest) -> list[sdk.ChatCompletionToolUnionParam]:
    """Eve's tools as Chat Completions function tools."""
    return [
        sdk.ChatCompletionFunctionToolParam(
            type="function",
            function={"name": t.name, "description": t.description, "parameters": t.input_schema},
        )
        for t in request.tools
    ]


def is_official(base_url: str | None) -> bool:
    return base_url is None or urlsplit(base_url).hostname == OFFICIAL_HOST


class OpenAIModel(SDKModel[openai.AsyncOpenAI]):
    """A ``ModelClient`` for ``openai/<model>`` or any OpenAI-compatible server."""

    provider = PROVIDER

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 0,
    ) -> None:
        base_url = base_url or os.environ.get(BASE_URL_ENV) or None
        key = api_key or os.environ.get(API_KEY_ENV)
        self._official = is_official(base_url)
        if not key and self._official:
            raise ModelCredentialsMissing(
                f"{API_KEY_ENV} is not set: export it (or pass api_key=) to use "
                f"{PROVIDER}/{model}, or set {BASE_URL_ENV} for a server that needs no key",
                variable=API_KEY_ENV,
            )
        super().__init__(
            model, api_key=key or PLACEHOLDER_KEY, base_url=base_url, max_retries=max_retries
        )

    def _new_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=self._api_key, base_url=self._base_url, max_retries=self._max_retries
        )

    def _translator(self) -> OpenAITranslator:
        return OpenAITranslator()

    async def _start(self, request: ModelRequest) -> openai.AsyncStream[sdk.ChatCompletionChunk]:
        tools = openai_tools(request)
        # OpenAI's reasoning models refuse max_tokens; compatible servers may not know the
        # newer max_completion_tokens.
        limit = request.max_output_tokens
        effort = cast(ReasoningEffort, request.reasoning)
        return await self._sdk().chat.completions.create(
            model=self._model,
            messages=openai_messages(request.system, request.messages),
            tools=tools or openai.omit,
            max_completion_tokens=limit if self._official else openai.omit,
            max_tokens=openai.omit if self._official else limit,
            reasoning_effort=effort if request.reasoning is not None else openai.omit,
            stream=True,
            stream_options={"include_usage": True},
        )

    @contextmanager
    def _sdk_errors(self) -> Iterator[None]:
        key = None if self._api_key == PLACEHOLDER_KEY else self._api_key
        try:
            yield
        except openai.APIStatusError as error:
            detail = describe(error.body, error.message)
            raise status_error(
                PROVIDER, error.status_code, detail, secret=key, headers=error.response.headers
            ) from error
        except openai.APIConnectionError as error:
            detail = str(error.__cause__ or error) or type(error).__name__
            raise connection_error(PROVIDER, detail, secret=key) from error
        except openai.APIError as error:
            detail = describe(error.body, error.message)
            raise provider_error(PROVIDER, detail, secret=key) from error
