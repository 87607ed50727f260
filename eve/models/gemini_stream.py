"""Translate a ``streamGenerateContent`` stream (each chunk a ``GenerateContentResponse`` in the
API's JSON) into eve model events, keeping every part as the API sent it.

Streamed text comes in pieces, one part per chunk; consecutive pieces of one kind (answer or
thought) are one part, and a piece that carries a ``thoughtSignature`` ends its part (the API
puts a signature on the last piece of the part it belongs to, sometimes an empty one: "Thought
signatures", https://ai.google.dev/gemini-api/docs/thought-signatures). Each completed part is
recorded as ``gemini_request`` sends it back:

* text without a signature: ``TextPart``; text with one: a ``ProviderPart`` holding the part;
* a thought (``thought: true``): ``ReasoningPart`` with its signature, if any;
* a function call: ``ToolCallEnd``, preceded by a text-less ``ReasoningPart`` holding its
  signature (``item_id`` is the call's id) when it has one;
* anything else (``inlineData`` images out, ``executableCode``, ``codeExecutionResult``):
  a ``ProviderPart`` holding the part.

Usage is cumulative: the last chunk's ``usageMetadata`` is the response's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from eve.errors import ModelConnectionError
from eve.messages import ProviderPart, ReasoningPart, StopReason, TextPart
from eve.models._tool_input import protocol_error
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
from eve.models.gemini_request import GENERATED_ID_PREFIX

# The API's finishReason values ("FinishReason", API reference,
# https://ai.google.dev/api/generate-content#FinishReason) in eve's words: every content
# filter is a refusal; a malformed or unexpected tool call and anything new is ``other``.
_REFUSALS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
_STOPS: dict[str, StopReason] = {"STOP": "end_turn", "MAX_TOKENS": "max_tokens"}


def stop_reason(finish: str, *, called: bool) -> StopReason:
    """eve's stop reason for the API's ``finishReason`` (``STOP`` with calls is ``tool_use``)."""
    if finish == "STOP" and called:
        return "tool_use"
    if finish in _REFUSALS:
        return "refusal"
    return _STOPS.get(finish, "other")


def usage_of(metadata: dict[str, Any]) -> TokenUsage:
    """eve's usage from ``usageMetadata``: the prompt count includes the cached tokens (and
    a tool's prompt is input too), the candidates count excludes the thoughts."""
    cached = int(metadata.get("cachedContentTokenCount") or 0)
    prompt = int(metadata.get("promptTokenCount") or 0)
    tool_prompt = int(metadata.get("toolUsePromptTokenCount") or 0)
    thoughts = int(metadata.get("thoughtsTokenCount") or 0)
    return TokenUsage(
        input_tokens=max(prompt - cached, 0) + tool_prompt,
        output_tokens=int(metadata.get("candidatesTokenCount") or 0) + thoughts,
        cache_read_tokens=cached,
        reasoning_tokens=thoughts,
    )


@dataclass
class _TextRun:
    """Text pieces of one kind, joined until a signature or another kind of part ends them."""

    thought: bool
    pieces: list[str] = field(default_factory=list)
    signature: str | None = None


def _readable(part: dict[str, Any]) -> str:
    """What a person or another provider may read of a part eve keeps as the API sent it."""
    if isinstance(result := part.get("codeExecutionResult"), dict):
        return str(result.get("output") or "")
    if isinstance(code := part.get("executableCode"), dict):
        return str(code.get("code") or "")
    return ""


class GeminiTranslator:
    """Feed it each chunk (a dict, as the API sent it), then ``finish()``."""

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._run: _TextRun | None = None
        self._calls = 0
        self._finish: str | None = None
        self._blocked: str | None = None
        self._usage = TokenUsage()

    def feed(self, chunk: dict[str, Any]) -> list[ModelEvent]:
        if isinstance(metadata := chunk.get("usageMetadata"), dict):
            self._usage = usage_of(metadata)
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            # the prompt itself was blocked: no candidate comes ("Safety settings")
            self._blocked = str(feedback["blockReason"])
        candidates = chunk.get("candidates") or []
        if not candidates:
            return []
        candidate = candidates[0]
        out: list[ModelEvent] = []
        for part in (candidate.get("content") or {}).get("parts") or []:
            out.extend(self._part(part))
        if candidate.get("finishReason"):
            self._finish = str(candidate["finishReason"])
        return out

    def _part(self, part: dict[str, Any]) -> list[ModelEvent]:
        if not isinstance(part, dict):
            raise protocol_error(self._provider, f"a content part is a {type(part).__name__}")
        if "text" in part and not set(part) - {"text", "thought", "thoughtSignature"}:
            return self._text(part)
        out = self._close_run()
        if isinstance(call := part.get("functionCall"), dict):
            return out + self._call(call, part.get("thoughtSignature"))
        block = ProviderPart(provider=self._provider, block=part, text=_readable(part))
        return [*out, PartCompleted(part=block)]

    def _text(self, part: dict[str, Any]) -> list[ModelEvent]:
        thought = bool(part.get("thought"))
        out: list[ModelEvent] = []
        if self._run is not None and self._run.thought != thought:
            out.extend(self._close_run())
        run = self._run = self._run or _TextRun(thought=thought)
        text = str(part["text"])
        if text:
            run.pieces.append(text)
            out.append(ReasoningDelta(text=text) if thought else TextDelta(text=text))
        if part.get("thoughtSignature"):
            run.signature = str(part["thoughtSignature"])
            out.extend(self._close_run())
        return out

    def _close_run(self) -> list[ModelEvent]:
        run, self._run = self._run, None
        if run is None:
            return []
        text = "".join(run.pieces)
        if run.thought:
            part = ReasoningPart(provider=self._provider, text=text, signature=run.signature)
            return [PartCompleted(part=part)]
        if run.signature is None:
            return [PartCompleted(part=TextPart(text=text))] if text else []
        block = {"text": text, "thoughtSignature": run.signature}
        kept = ProviderPart(provider=self._provider, block=block, text=text, answer=True)
        return [PartCompleted(part=kept)]

    def _call(self, call: dict[str, Any], signature: object) -> list[ModelEvent]:
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise protocol_error(self._provider, "a functionCall part has no name")
        args = call.get("args") or {}
        if not isinstance(args, dict):
            raise protocol_error(
                self._provider, f"functionCall {name!r} args is a {type(args).__name__}"
            )
        self._calls += 1
        call_id = str(call.get("id") or f"{GENERATED_ID_PREFIX}{uuid.uuid4().hex[:16]}")
        out: list[ModelEvent] = []
        if isinstance(signature, str) and signature:
            held = ReasoningPart(provider=self._provider, signature=signature, item_id=call_id)
            out.append(PartCompleted(part=held))
        out.append(ToolCallStart(id=call_id, name=name))
        out.append(ToolCallDelta(id=call_id, json_delta=json.dumps(args)))
        out.append(ToolCallEnd(id=call_id, name=name, input=args))
        return out

    def finish(self) -> list[ModelEvent]:
        """The stream ended: the parts still open, then ``Done``."""
        out = self._close_run()
        if self._finish is None and self._blocked is not None:
            blocked = Done(
                stop_reason="refusal", usage=self._usage, provider_stop_reason=self._blocked
            )
            return [*out, blocked]
        if self._finish is None:
            raise ModelConnectionError(
                f"{self._provider}: the stream ended before the response was complete (no "
                "finishReason); the connection was probably cut off",
                provider=self._provider,
            )
        reason = stop_reason(self._finish, called=self._calls > 0)
        provider_reason = None if reason in ("end_turn", "tool_use") else self._finish
        return [
            *out,
            Done(stop_reason=reason, usage=self._usage, provider_stop_reason=provider_reason),
        ]


def translate_gemini_chunks(
    provider: str, chunks: Iterable[dict[str, Any]]
) -> Iterator[ModelEvent]:
    """The eve events for a complete list of chunks (a recorded stream, for replay)."""
    translator = GeminiTranslator(provider)
    for chunk in chunks:
        yield from translator.feed(chunk)
    yield from translator.finish()
