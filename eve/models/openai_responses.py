"""The Responses API, for OpenAI's own endpoint: the request and a translator over SDK events.

Requests are stateless (``store: false``), so everything the model needs goes back in
``input`` on every step: the history as items, in order, with each reasoning item as it came
(its ``rs_…`` id, summary and ``encrypted_content``, asked for through ``include``), so a
reasoning model keeps its reasoning across tool calls. What a response produced comes back
as parts when each output item is done (``response.output_item.done``), in the order of
the items' ``output_index`` (items may finish out of order; the history keeps the model's):

* ``message`` → ``TextPart``; with annotations (citations) or a ``phase`` (``commentary``,
  ``final_answer``: OpenAI asks clients to resend it on every assistant message) →
  ``ProviderPart`` holding the item, so it goes back verbatim, id included, and another
  provider reads its text;
* ``reasoning`` → one ``ReasoningPart`` per summary part (its text, the item's encrypted
  content and id); the parts of one item go back as that one item, its summary parts apart;
* ``function_call`` → ``ToolCallEnd`` (the loop makes it a ``ToolCallPart``);
* any other item (``web_search_call``, ``file_search_call`` …) → ``ProviderPart``.

:func:`translate_responses_events` runs the same translator over events already received.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any, cast

import openai
from openai.types import responses as sdk
from openai.types.shared import ReasoningEffort

from eve.messages import (
    AssistantMessage,
    DocumentPart,
    ImagePart,
    Message,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
    parts_for,
)
from eve.models._settings import extra_body, refuse_unsupported
from eve.models._tool_input import parse_tool_input, protocol_error
from eve.models.base import ModelRequest
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
from eve.models.openai_parts import (
    PROVIDER,
    document_as_text,
    ended_early,
    file_name,
    json_schema_format,
    media_url,
    result_text,
    stream_error,
)

#: models that reason whether or not eve asks (their items must be sent back encrypted)
_REASONING_MODELS = re.compile(r"^(o\d|gpt-5|codex)")

_INCOMPLETE_REASONS: dict[str, StopReason] = {
    "max_output_tokens": "max_tokens",
    "content_filter": "refusal",
}

Item = dict[str, Any]


class ResponsesTranslator:
    """Checks one streamed response, event by event, and turns it into eve events."""

    def __init__(self) -> None:
        self._created = False
        self._done = False
        #: output items added and not done yet: output_index → the item's type
        self._open: dict[int, str] = {}
        #: function calls being streamed: output_index → call_id
        self._call_ids: dict[int, str] = {}
        self._calls = 0
        self._refused = False
        #: finished items waiting for an earlier one: output_index → their events
        self._finished: dict[int, list[ModelEvent]] = {}
        #: the output_index whose events go out next
        self._next = 0

    def feed(self, event: sdk.ResponseStreamEvent) -> list[ModelEvent]:
        if self._done:
            raise protocol_error(PROVIDER, f"{event.type} after the response ended")
        if not self._created:
            if not isinstance(event, sdk.ResponseCreatedEvent):
                raise protocol_error(PROVIDER, f"{event.type} before response.created")
            self._created = True
            return []
        match event:
            case sdk.ResponseCreatedEvent():
                raise protocol_error(PROVIDER, "a second response.created in one stream")
            case sdk.ResponseOutputItemAddedEvent():
                return self._added(event.output_index, event.item)
            case sdk.ResponseOutputItemDoneEvent():
                self._close(event.output_index, event.type)
                self._finished[event.output_index] = self._item_done(event.item)
                return self._in_order()
            case sdk.ResponseCompletedEvent():
                return self._completed(event.response)
            case sdk.ResponseIncompleteEvent():
                self._done = True
                details = event.response.incomplete_details
                reason = _INCOMPLETE_REASONS.get(str(details.reason if details else ""), "other")
                usage = responses_usage(event.response.usage)
                return [*self._in_order(all_of_them=True), Done(stop_reason=reason, usage=usage)]
            case sdk.ResponseFailedEvent():
                error = event.response.error
                raise stream_error(
                    error.code if error else None, error.message if error else "response failed"
                )
            case sdk.ResponseErrorEvent():
                raise stream_error(event.code, event.message)
            case _:
                return self._delta(event)

    def _delta(self, event: sdk.ResponseStreamEvent) -> list[ModelEvent]:
        # The SDK's union has some fifty event types; only these carry what eve shows as it
        # streams (the rest announce progress or repeat what a ``done`` event holds).
        match event:
            case sdk.ResponseTextDeltaEvent():
                self._check_open(event.output_index, event.type)
                return [TextDelta(text=event.delta)] if event.delta else []
            case sdk.ResponseRefusalDeltaEvent():
                self._check_open(event.output_index, event.type)
                self._refused = True
                return [TextDelta(text=event.delta)] if event.delta else []
            case (
                sdk.ResponseReasoningSummaryTextDeltaEvent() | sdk.ResponseReasoningTextDeltaEvent()
            ):
                self._check_open(event.output_index, event.type)
                return [ReasoningDelta(text=event.delta)] if event.delta else []
            case sdk.ResponseFunctionCallArgumentsDeltaEvent():
                self._check_open(event.output_index, event.type)
                call_id = self._call_ids.get(event.output_index)
                if call_id is None:
                    raise protocol_error(
                        PROVIDER, f"{event.type} for output {event.output_index}, not a call"
                    )
                return [ToolCallDelta(id=call_id, json_delta=event.delta)] if event.delta else []
            case _:
                return []

    def finish(self) -> list[ModelEvent]:
        """The stream ended: an error unless the response completed (``Done`` came already)."""
        if not self._done:
            raise ended_early("response.completed")
        return []

    def _added(self, index: int, item: sdk.ResponseOutputItem) -> list[ModelEvent]:
        if index in self._open:
            raise protocol_error(PROVIDER, f"output {index} added twice")
        self._open[index] = item.type
        if isinstance(item, sdk.ResponseFunctionToolCall):
            self._call_ids[index] = item.call_id
            return [ToolCallStart(id=item.call_id, name=item.name)]
        return []

    def _check_open(self, index: int, what: str) -> None:
        if index not in self._open:
            raise protocol_error(PROVIDER, f"{what} for output {index}, which is not open")

    def _close(self, index: int, what: str) -> None:
        self._check_open(index, what)
        del self._open[index]

    def _item_done(self, item: sdk.ResponseOutputItem) -> list[ModelEvent]:
        match item:
            case sdk.ResponseOutputMessage():
                return _message_done(item)
            case sdk.ResponseReasoningItem():
                texts = [s.text for s in item.summary] or [c.text for c in item.content or []]
                # one part per summary part, so each goes back as its own summary part
                return [
                    PartCompleted(
                        part=ReasoningPart(
                            provider=PROVIDER,
                            text=text,
                            payload=item.encrypted_content,
                            item_id=item.id,
                        )
                    )
                    for text in texts or [""]
                ]
            case sdk.ResponseFunctionToolCall():
                self._calls += 1
                arguments = parse_tool_input(PROVIDER, item.name, item.arguments)
                return [ToolCallEnd(id=item.call_id, name=item.name, input=arguments)]
            case _:
                block = ProviderPart(provider=PROVIDER, block=item.to_dict())
                return [PartCompleted(part=block)]

    def _in_order(self, *, all_of_them: bool = False) -> list[ModelEvent]:
        """The finished items' events that may go out: those up to the first index still
        streaming, or (at the end) all of them, by index."""
        out: list[ModelEvent] = []
        while self._finished:
            if self._next not in self._finished:
                if not all_of_them:
                    break
                self._next = min(self._finished)
            out.extend(self._finished.pop(self._next))
            self._next += 1
        return out

    def _completed(self, response: sdk.Response) -> list[ModelEvent]:
        if self._open:
            raise protocol_error(
                PROVIDER, f"response.completed with output(s) {sorted(self._open)} still open"
            )
        self._done = True
        held = self._in_order(all_of_them=True)
        reason: StopReason = "end_turn"
        if self._calls:
            reason = "tool_use"
        elif self._refused:
            reason = "refusal"
        return [*held, Done(stop_reason=reason, usage=responses_usage(response.usage))]


def _message_done(item: sdk.ResponseOutputMessage) -> list[ModelEvent]:
    texts: list[str] = []
    cited = False
    for content in item.content:
        match content:
            case sdk.ResponseOutputText():
                texts.append(content.text)
                cited = cited or bool(content.annotations)
            case sdk.ResponseOutputRefusal():
                texts.append(content.refusal)
    text = "".join(texts)
    # phase: "preserve and resend phase on all assistant messages" (the SDK's
    # ResponseOutputMessage.phase); the item as it came carries it, with its id
    if cited or item.phase is not None:
        return [
            PartCompleted(
                part=ProviderPart(provider=PROVIDER, block=item.to_dict(), text=text, answer=True)
            )
        ]
    return [PartCompleted(part=TextPart(text=text))] if text else []


def responses_usage(usage: sdk.ResponseUsage | None) -> TokenUsage:
    """Usage by kind: OpenAI's ``input_tokens`` include the cached ones, its
    ``output_tokens`` the reasoning ones."""
    if usage is None:
        return TokenUsage()
    details = usage.input_tokens_details
    cached = (details.cached_tokens if details else 0) or 0
    written = getattr(details, "cache_write_tokens", 0) or 0
    output = usage.output_tokens_details
    return TokenUsage(
        input_tokens=max(usage.input_tokens - cached - written, 0),
        output_tokens=usage.output_tokens,
        cache_read_tokens=cached,
        cache_write_tokens=written,
        reasoning_tokens=(output.reasoning_tokens if output else 0) or 0,
    )


def translate_responses_events(events: Iterable[sdk.ResponseStreamEvent]) -> Iterator[ModelEvent]:
    """The eve events for a complete list of SDK Responses stream events."""
    translator = ResponsesTranslator()
    for event in events:
        yield from translator.feed(event)
    yield from translator.finish()


def responses_input(messages: list[Message]) -> list[Item]:
    """Eve's history as Responses input items, in order."""
    items: list[Item] = []
    for message in messages:
        match message:
            case UserMessage():
                items.append({"role": "user", "content": _content(message.parts)})
            case ToolResultMessage():
                output: str | list[Item] = result_text(message)
                if message.media:
                    output = _content([TextPart(text=result_text(message)), *message.media])
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": message.tool_call_id,
                        "output": output,
                    }
                )
            case AssistantMessage():
                items.extend(_assistant_items(message))
    return items


def _content(parts: Iterable[TextPart | ImagePart | DocumentPart]) -> list[Item]:
    out: list[Item] = []
    for part in parts:
        match part:
            case TextPart():
                out.append({"type": "input_text", "text": part.text})
            case ImagePart():
                out.append({"type": "input_image", "image_url": media_url(part), "detail": "auto"})
            case DocumentPart():
                out.append(_document(part))
    return out


def _document(part: DocumentPart) -> Item:
    text = document_as_text(part)
    if text is not None:
        return {"type": "input_text", "text": text}
    if part.url is not None:
        return {"type": "input_file", "file_url": part.url}
    return {"type": "input_file", "file_data": media_url(part), "filename": file_name(part)}


def _assistant_items(message: AssistantMessage) -> list[Item]:
    items: list[Item] = []
    for part in parts_for(PROVIDER, message.parts):
        match part:
            case TextPart():
                if part.text:
                    items.append({"role": "assistant", "content": part.text})
            case ReasoningPart():
                # With store false an item id alone refers to nothing the API kept: reasoning
                # without its encrypted content cannot go back.
                if part.payload is None or part.item_id is None:
                    continue
                summary = [{"type": "summary_text", "text": part.text}] if part.text else []
                last = items[-1] if items else None
                if (
                    last is not None
                    and last.get("type") == "reasoning"
                    and last.get("id") == (part.item_id)
                ):
                    last["summary"].extend(summary)  # another summary part of the same item
                    continue
                items.append(
                    {
                        "type": "reasoning",
                        "id": part.item_id,
                        "summary": summary,
                        "encrypted_content": part.payload,
                    }
                )
            case ToolCallPart():
                items.append(
                    {
                        "type": "function_call",
                        "call_id": part.id,
                        "name": part.name,
                        "arguments": json.dumps(part.input),
                    }
                )
            case ProviderPart():
                items.append(dict(part.block))
    return items


def responses_tools(request: ModelRequest) -> list[Item]:
    """Eve's tools as Responses function tools, then the hosted tools declared for OpenAI."""
    tools: list[Item] = [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.input_schema,
            # the Responses API makes function tools strict unless told otherwise, and strict
            # mode refuses schemas that are not written for it
            "strict": json_schema_format(t.input_schema)["strict"],
        }
        for t in request.tools
    ]
    tools.extend(
        {"type": p.type, **p.config} for p in request.provider_tools if p.provider == PROVIDER
    )
    return tools


def reasons(model: str, request: ModelRequest) -> bool:
    """Whether the response may hold reasoning items: eve asked for reasoning, or the model
    is one of OpenAI's reasoning models (which reason by default)."""
    return request.reasoning is not None or _REASONING_MODELS.match(model) is not None


async def start_response(
    client: openai.AsyncOpenAI, model: str, request: ModelRequest
) -> openai.AsyncStream[sdk.ResponseStreamEvent]:
    """Start one streamed, stateless response for ``request``."""
    settings = request.settings
    # https://platform.openai.com/docs/api-reference/responses/create: temperature and
    # top_p, but no stop sequences and no seed
    refuse_unsupported(
        settings,
        api="OpenAI's Responses API",
        provider="openai",
        supported={"temperature", "top_p"},
        hint=", or speak Chat Completions, which takes it (define_agent(openai_api="
        '"chat-completions"))',
    )
    tools = responses_tools(request)
    reasoning: Any = openai.omit
    if request.reasoning is not None:
        effort = cast(ReasoningEffort, request.reasoning)  # eve's levels are OpenAI's efforts
        reasoning = {"effort": effort}
        if request.reasoning != "none":
            reasoning["summary"] = "auto"
    schema = request.output_schema
    text: Any = openai.omit
    if schema is not None:
        text = {"format": {"type": "json_schema", **json_schema_format(schema)}}
    return await client.responses.create(
        model=model,
        instructions=request.system or openai.omit,
        input=cast(sdk.ResponseInputParam, responses_input(request.messages)),
        tools=cast(list[sdk.ToolParam], tools) if tools else openai.omit,
        max_output_tokens=request.max_output_tokens,
        reasoning=reasoning,
        include=["reasoning.encrypted_content"] if reasons(model, request) else openai.omit,
        text=text,
        store=False,
        stream=True,
        temperature=openai.omit if settings.temperature is None else settings.temperature,
        top_p=openai.omit if settings.top_p is None else settings.top_p,
        extra_body=extra_body(settings),
    )
