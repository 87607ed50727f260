"""Chat Completions, for OpenAI-compatible servers: the request and a translator over SDK chunks.

Any OpenAI-compatible server (llama.cpp, vLLM, Ollama …) speaks Chat Completions; OpenAI's own
endpoint gets the Responses API instead (``eve.models.openai_responses``) unless a node sets
``openai_api="chat-completions"``. :class:`OpenAITranslator` assembles tool calls by ``index``
(id and name in a call's first chunk, its arguments split over many) and checks the stream;
:func:`translate_openai_chunks` runs the same translator over chunks already received.

What Chat Completions cannot carry, and what eve sends instead:

* reasoning: the API takes none back, so reasoning parts are dropped from the history (a
  compatible server's ``reasoning_content`` is shown as it streams, never sent back);
* provider blocks (a Responses ``web_search_call``): their text, by ``parts_for``;
* a tool result's images and documents: a ``tool`` message takes text only, so they follow
  the batch's tool messages as one user message, each introduced by the call it came from;
* hosted tools: none exist here, so ``provider_tool(provider="openai", …)`` is not sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import openai
from openai.types import chat as sdk
from openai.types.completion_usage import CompletionUsage
from openai.types.shared import ReasoningEffort

from eve.messages import (
    AssistantMessage,
    DocumentPart,
    ImagePart,
    Message,
    TextPart,
    ToolResultMessage,
    UserMessage,
    parts_for,
)
from eve.models._settings import extra_body
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
from eve.models.openai_parts import (
    PROVIDER,
    document_as_text,
    ended_early,
    file_name,
    json_schema_format,
    media_url,
    result_text,
)

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
            self._usage = chat_usage(chunk.usage)
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
            raise ended_early("finish_reason")
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
    # media from the tool results of one batch, sent after its last tool message
    held: list[sdk.ChatCompletionContentPartParam] = []
    for message in messages:
        if not isinstance(message, ToolResultMessage) and held:
            out.append(sdk.ChatCompletionUserMessageParam(role="user", content=held))
            held = []
        match message:
            case UserMessage():
                # text alone goes as a string, which every compatible server takes
                content = (
                    message.text
                    if message.parts and all(isinstance(p, TextPart) for p in message.parts)
                    else _content(message.parts)
                )
                out.append(sdk.ChatCompletionUserMessageParam(role="user", content=content))
            case ToolResultMessage():
                out.append(
                    sdk.ChatCompletionToolMessageParam(
                        role="tool", tool_call_id=message.tool_call_id, content=result_text(message)
                    )
                )
                if message.media:
                    intro = TextPart(
                        text=f"Attached to the result of tool call {message.tool_call_id}:"
                    )
                    held.extend(_content([intro, *message.media]))
            case AssistantMessage():
                assistant = _assistant(message)
                if assistant is not None:
                    out.append(assistant)
    if held:
        out.append(sdk.ChatCompletionUserMessageParam(role="user", content=held))
    return out


def _content(
    parts: Iterable[TextPart | ImagePart | DocumentPart],
) -> list[sdk.ChatCompletionContentPartParam]:
    out: list[sdk.ChatCompletionContentPartParam] = []
    for part in parts:
        match part:
            case TextPart():
                out.append(sdk.ChatCompletionContentPartTextParam(type="text", text=part.text))
            case ImagePart():
                out.append(
                    sdk.ChatCompletionContentPartImageParam(
                        type="image_url", image_url={"url": media_url(part)}
                    )
                )
            case DocumentPart():
                out.append(_document(part))
    return out


def _document(part: DocumentPart) -> sdk.ChatCompletionContentPartParam:
    text = document_as_text(part)
    if text is not None:
        return sdk.ChatCompletionContentPartTextParam(type="text", text=text)
    if part.url is not None:
        # Chat Completions takes files inline only: the model is told where the document is.
        label = part.name or part.url
        return sdk.ChatCompletionContentPartTextParam(
            type="text",
            text=f"[document {label} at {part.url}: not attached, this API takes no file URLs]",
        )
    file = {"file_data": media_url(part), "filename": file_name(part)}
    return cast(sdk.ChatCompletionContentPartParam, {"type": "file", "file": file})


def _assistant(message: AssistantMessage) -> sdk.ChatCompletionAssistantMessageParam | None:
    # Chat Completions takes no reasoning or provider items back, not even OpenAI's own: as
    # for a foreign provider, reasoning is dropped and provider blocks become their text.
    parts = parts_for("chat-completions", message.parts)
    text = "".join(p.text for p in parts if isinstance(p, TextPart))
    calls = message.tool_calls
    if not text and not calls:
        return None
    param = sdk.ChatCompletionAssistantMessageParam(role="assistant", content=text or None)
    if calls:
        param["tool_calls"] = [
            sdk.ChatCompletionMessageFunctionToolCallParam(
                id=c.id,
                type="function",
                function={"name": c.name, "arguments": json.dumps(c.input)},
            )
            for c in calls
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


async def start_chat(
    client: openai.AsyncOpenAI, model: str, request: ModelRequest, *, official: bool
) -> openai.AsyncStream[sdk.ChatCompletionChunk]:
    """Start one streamed chat completion for ``request``."""
    tools = openai_tools(request)
    settings = request.settings
    # OpenAI's reasoning models refuse max_tokens; compatible servers may not know the
    # newer max_completion_tokens.
    limit = request.max_output_tokens
    effort = cast(ReasoningEffort, request.reasoning)  # eve's levels are OpenAI's efforts
    schema = request.output_schema
    response_format: Any = (
        {"type": "json_schema", "json_schema": json_schema_format(schema)}
        if schema is not None
        else openai.omit
    )
    return await client.chat.completions.create(
        model=model,
        messages=openai_messages(request.system, request.messages),
        tools=tools or openai.omit,
        max_completion_tokens=limit if official else openai.omit,
        max_tokens=openai.omit if official else limit,
        reasoning_effort=effort if request.reasoning is not None else openai.omit,
        response_format=response_format,
        stream=True,
        stream_options={"include_usage": True},
        # https://platform.openai.com/docs/api-reference/chat/create: all four are parameters
        temperature=_given(settings.temperature),
        top_p=_given(settings.top_p),
        stop=list(settings.stop_sequences) if settings.stop_sequences else openai.omit,
        seed=_given(settings.seed),
        extra_body=extra_body(settings),
    )


def _given(value: Any) -> Any:
    return openai.omit if value is None else value


def chat_usage(usage: CompletionUsage) -> TokenUsage:
    """Chat Completions usage by kind: ``prompt_tokens`` include the cached ones."""
    cached = usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else None
    details = usage.completion_tokens_details
    reasoning = details.reasoning_tokens if details else None
    return TokenUsage(
        input_tokens=usage.prompt_tokens - (cached or 0),
        output_tokens=usage.completion_tokens,
        cache_read_tokens=cached or 0,
        reasoning_tokens=reasoning or 0,
    )
