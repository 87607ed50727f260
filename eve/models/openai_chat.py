"""Chat Completions, for OpenAI-compatible servers: the request and a translator over SDK chunks.

Any OpenAI-compatible server (llama.cpp, vLLM, Ollama …) speaks Chat Completions; OpenAI's own
endpoint gets the Responses API instead (``eve.models.openai_responses``) unless a node sets
``openai_api="chat-completions"``. The stream is read by the liberal reader in
``eve.models.openai_chat_reader`` (every compatible server's dialect);
:func:`translate_openai_chunks` runs it over chunks already received.

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
from typing import Any, cast

import openai
from openai.types import chat as sdk
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
from eve.models.base import ModelRequest
from eve.models.events import ModelEvent
from eve.models.openai_chat_reader import STREAM_DONE, ChatStream, OpenAITranslator
from eve.models.openai_parts import (
    document_as_text,
    file_name,
    json_schema_format,
    media_url,
    result_text,
)


def translate_openai_chunks(chunks: Iterable[object], *, done: bool = True) -> Iterator[ModelEvent]:
    """The eve events for a complete list of chat completion chunks (SDK objects or their
    JSON); ``done`` says the stream ended with ``[DONE]``, as a whole one does."""
    translator = OpenAITranslator()
    for chunk in chunks:
        yield from translator.feed(chunk)
    if done:
        yield from translator.feed(STREAM_DONE)
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
) -> ChatStream:
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
    stream = await client.chat.completions.create(
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
    return ChatStream(stream)


def _given(value: Any) -> Any:
    return openai.omit if value is None else value
