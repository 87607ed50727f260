"""A liberal reader of Chat Completions streams, as real OpenAI-compatible servers send them.

"OpenAI-compatible" is a family of dialects, and each of these is a real server's stream
(issue 32): OpenRouter repeats ``finish_reason`` on its final usage chunk; Snowflake Cortex
ends with ``[DONE]`` and no finish reason at all; Mistral's reasoning models stream
``delta.content`` as a list of typed chunks (``text``, ``thinking``); Gemini's compatible
endpoint sends tool calls with ``"id": ""``; vLLM, llama.cpp and DeepSeek stream reasoning as
``reasoning_content``, OpenRouter and Ollama as ``reasoning``; most send usage in a chunk
with no choices. The SDK parses chunks without validating them (``construct``), so a field
may hold any JSON value: the reader works on each chunk as plain JSON (``to_dict``) and
reads every field by its type, never trusting the SDK's annotations.

A protocol error is kept for a stream that cannot be understood: a tool call with no name,
arguments that are not a JSON object, ``finish_reason: tool_calls`` with no call. A stream
that ends without a finish reason is complete when it sent ``[DONE]`` (see
:class:`ChatStream`) and cut off when it did not.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import openai
from openai._streaming import ServerSentEvent, SSEDecoder
from pydantic import BaseModel

from eve.models._tool_input import parse_tool_input, protocol_error
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
from eve.models.openai_parts import PROVIDER, ended_early

_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "eos": "end_turn",  # some vLLM builds and Together
    "end_turn": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "tool_use": "tool_use",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "model_length": "max_tokens",  # Mistral
    "content_filter": "refusal",
    "stop_sequence": "stop_sequence",
}

#: the delta fields compatible servers stream reasoning in
_REASONING_FIELDS = ("reasoning_content", "reasoning")


class StreamDone:
    """The stream's ``data: [DONE]`` line, which the SDK swallows: :class:`ChatStream`
    yields :data:`STREAM_DONE` after the last chunk when the server sent it."""


STREAM_DONE = StreamDone()


class _DoneMarkingDecoder(SSEDecoder):
    """The SDK's decoder, noting whether ``[DONE]`` came (the SDK stops at it silently)."""

    def __init__(self) -> None:
        super().__init__()
        self.done = False

    async def aiter_bytes(self, iterator: AsyncIterator[bytes]) -> AsyncIterator[ServerSentEvent]:
        async for event in super().aiter_bytes(iterator):
            if event.data.startswith("[DONE]"):
                self.done = True
            yield event


class ChatClient(openai.AsyncOpenAI):
    """The SDK client, with a decoder per stream that notes ``[DONE]``: without it, a
    server that ends a complete answer with ``[DONE]`` and no finish reason (Snowflake
    Cortex) could not be told from a cut connection, which eve retries."""

    def _make_sse_decoder(self) -> _DoneMarkingDecoder:
        return _DoneMarkingDecoder()


class ChatStream:
    """An SDK chunk stream that ends with :data:`STREAM_DONE` when the server sent ``[DONE]``."""

    def __init__(self, stream: openai.AsyncStream[Any]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[Any]:
        async for chunk in self._stream:
            yield chunk
        # the SDK keeps its decoder private; a client other than ChatClient never says DONE
        decoder = getattr(self._stream, "_decoder", None)
        if isinstance(decoder, _DoneMarkingDecoder) and decoder.done:
            yield STREAM_DONE

    async def close(self) -> None:
        await self._stream.close()


def _json(chunk: object) -> object:
    """The chunk as the JSON the server sent (the SDK's model keeps every field it got)."""
    if isinstance(chunk, BaseModel):
        return chunk.model_dump(mode="python", exclude_unset=True, warnings=False)
    return chunk


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int(value: object) -> int:
    # bool is an int in Python, never a count in JSON
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass
class _Call:
    id: str
    name: str
    parts: list[str] = field(default_factory=list)

    def complete(self) -> bool:
        """Whether the arguments so far are a whole JSON value (a new call may follow)."""
        try:
            json.loads("".join(self.parts))
        except ValueError:
            return False
        return True


class OpenAITranslator:
    """Reads one chat completion stream, chunk by chunk, and turns it into eve events."""

    def __init__(self) -> None:
        self._calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._finish_reason: str | None = None
        self._saw_done = False
        self._refused = False
        self._usage = TokenUsage()

    def feed(self, chunk: object) -> list[ModelEvent]:
        if isinstance(chunk, StreamDone):
            self._saw_done = True
            return []
        data = _dict(_json(chunk))
        if isinstance(data.get("usage"), Mapping):
            self._usage = chat_usage(data["usage"])
        out: list[ModelEvent] = []
        for item in _list(data.get("choices")):
            choice = _dict(item)
            if _index(choice.get("index")) not in (0, None):
                continue  # eve asks for one choice; others would be another answer
            out.extend(self._delta(_dict(choice.get("delta") or choice.get("message"))))
            reason = choice.get("finish_reason")
            # OpenRouter repeats the reason on its usage chunk: the first one counts
            if isinstance(reason, str) and reason and self._finish_reason is None:
                self._finish_reason = reason
        return out

    def finish(self) -> list[ModelEvent]:
        """The stream ended: its tool calls and the one ``Done``, or an error when it was
        cut off (no finish reason and no ``[DONE]``)."""
        if self._finish_reason is None and not self._saw_done:
            raise ended_early("finish_reason")
        claimed = _FINISH_REASONS.get(self._finish_reason or "")
        if claimed == "tool_use" and not self._calls:
            raise protocol_error(
                PROVIDER, f"finish_reason {self._finish_reason}, but no tool call was sent"
            )
        out: list[ModelEvent] = [
            ToolCallEnd(
                id=c.id, name=c.name, input=parse_tool_input(PROVIDER, c.name, "".join(c.parts))
            )
            for c in self._calls
        ]
        out.append(Done(stop_reason=self._stop_reason(), usage=self._usage))
        return out

    def _delta(self, delta: Mapping[str, Any]) -> list[ModelEvent]:
        out: list[ModelEvent] = []
        for name in _REASONING_FIELDS:
            if reasoning := _str(delta.get(name)):
                out.append(ReasoningDelta(text=reasoning))
                break  # servers that send both send the same text twice
        content = delta.get("content")
        if isinstance(content, list):
            out.extend(_typed_chunks(content))
        elif text := _str(content):
            out.append(TextDelta(text=text))
        if refusal := _str(delta.get("refusal")):
            self._refused = True
            out.append(TextDelta(text=refusal))
        for tool_delta in _list(delta.get("tool_calls")):
            out.extend(self._tool_delta(_dict(tool_delta)))
        return out

    def _tool_delta(self, delta: Mapping[str, Any]) -> list[ModelEvent]:
        out: list[ModelEvent] = []
        function = _dict(delta.get("function"))
        index = _index(delta.get("index"))
        call_id = _str(delta.get("id"))
        name = _str(function.get("name"))
        call = self._call_at(index)
        if self._starts_call(call, call_id, name):
            if not name:
                raise protocol_error(
                    PROVIDER, f"tool call delta for index {index}, which has no name yet"
                )
            # Gemini's endpoint sends "id": "" and some servers none: eve names the call,
            # and sends the same id back with its result
            call = _Call(call_id or f"call_{uuid.uuid4().hex[:24]}", name)
            self._calls.append(call)
            if index is not None:
                self._by_index[index] = call
            out.append(ToolCallStart(id=call.id, name=call.name))
        assert call is not None  # _starts_call is True for no call
        arguments = function.get("arguments")
        # a few servers send the arguments as an object rather than its JSON text
        piece = arguments if isinstance(arguments, str) else _object_text(arguments)
        if piece:
            call.parts.append(piece)
            out.append(ToolCallDelta(id=call.id, json_delta=piece))
        return out

    def _call_at(self, index: int | None) -> _Call | None:
        if index is not None:
            return self._by_index.get(index)
        return self._calls[-1] if self._calls else None  # no index: the latest call goes on

    @staticmethod
    def _starts_call(call: _Call | None, call_id: str, name: str) -> bool:
        if call is None:
            return True
        # Some compatible servers number every call 0: a new id starts a new call, and so
        # does a name without an id once the call's arguments are whole.
        if call_id:
            return call_id != call.id
        return bool(name) and bool(call.parts) and call.complete()

    def _stop_reason(self) -> StopReason:
        reason = self._finish_reason
        mapped = _FINISH_REASONS.get(reason, "other") if reason is not None else "end_turn"
        if mapped == "end_turn" and self._calls:
            return "tool_use"  # compatible servers that call tools but say "stop"
        if mapped == "end_turn" and self._refused:
            return "refusal"
        return mapped


def _index(value: object) -> int | None:
    """A choice's or tool call's ``index``; None when missing or not an index."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _object_text(value: object) -> str:
    return json.dumps(value) if isinstance(value, dict) else ""


def _typed_chunks(content: list[Any]) -> list[ModelEvent]:
    """Mistral's content list: ``text`` chunks are the answer, ``thinking`` chunks (their
    own list of text chunks) the reasoning; other kinds (references) have nothing to show."""
    out: list[ModelEvent] = []
    for raw in content:
        item = _dict(raw)
        match item.get("type"):
            case "text":
                if text := _str(item.get("text")):
                    out.append(TextDelta(text=text))
            case "thinking":
                thinking = item.get("thinking")
                pieces = [thinking] if isinstance(thinking, str) else _list(thinking)
                text = "".join(_str(p) or _str(_dict(p).get("text")) for p in pieces)
                if text:
                    out.append(ReasoningDelta(text=text))
            case _:
                pass
    return out


def chat_usage(usage: Mapping[str, Any]) -> TokenUsage:
    """Chat Completions usage by kind: ``prompt_tokens`` include the cached ones."""
    cached = _int(_dict(usage.get("prompt_tokens_details")).get("cached_tokens"))
    reasoning = _int(_dict(usage.get("completion_tokens_details")).get("reasoning_tokens"))
    return TokenUsage(
        input_tokens=max(_int(usage.get("prompt_tokens")) - cached, 0),
        output_tokens=_int(usage.get("completion_tokens")),
        cache_read_tokens=cached,
        reasoning_tokens=reasoning,
    )
