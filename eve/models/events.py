"""What a model client streams back: a closed set of events, ending with exactly one ``Done``."""

from __future__ import annotations

from typing import Any

import msgspec

from eve.messages import StopReason
from eve.usage import TokenUsage

__all__ = [
    "Done",
    "ModelEvent",
    "ReasoningDelta",
    "StopReason",
    "TextDelta",
    "TokenUsage",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
]


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


class Done(_Event, frozen=True, kw_only=True, tag="done"):
    stop_reason: StopReason
    usage: TokenUsage = TokenUsage()


ModelEvent = TextDelta | ReasoningDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | Done
