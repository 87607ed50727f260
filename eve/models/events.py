"""What a model client streams back: a closed set of events, ending with exactly one ``Done``."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "other"]


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class TextDelta(_Event, frozen=True, kw_only=True, tag="text-delta"):
    text: str


class ReasoningDelta(_Event, frozen=True, kw_only=True, tag="reasoning-delta"):
    text: str


class ToolCallStart(_Event, frozen=True, kw_only=True, tag="tool-call-start"):
    id: str
    name: str


class ToolCallDelta(_Event, frozen=True, kw_only=True, tag="tool-call-delta"):
    """A piece of the call's input JSON, as the provider streamed it."""

    id: str
    json_delta: str


class ToolCallEnd(_Event, frozen=True, kw_only=True, tag="tool-call-end"):
    """The call's input is complete; ``input`` is the parsed object."""

    id: str
    name: str
    input: dict[str, Any]


class TokenUsage(msgspec.Struct, frozen=True, kw_only=True):
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class Done(_Event, frozen=True, kw_only=True, tag="done"):
    stop_reason: StopReason
    usage: TokenUsage = TokenUsage()


ModelEvent = TextDelta | ReasoningDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | Done
