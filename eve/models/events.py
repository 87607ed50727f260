"""What a model client streams back: a closed set of events, ending with exactly one ``Done``."""

from __future__ import annotations

from typing import Any

import msgspec

from eve._usage import TokenUsage
from eve.messages import ProviderPart, ReasoningPart, StopReason, TextPart

__all__ = [
    "Done",
    "ModelEvent",
    "PartCompleted",
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


class PartCompleted(_Event, frozen=True, kw_only=True, tag="part-completed"):
    """A content block is complete: the part the history records for it, verbatim.

    Deltas are for showing the response as it streams; an adapter that sends these says
    exactly what goes back to the provider next step (reasoning with its signature, a
    server tool's blocks, cited text), in order with its ``ToolCallEnd`` events. When a
    response has none, the loop builds its parts from the deltas (text, then tool calls).
    """

    part: TextPart | ReasoningPart | ProviderPart


class Retrying(_Event, frozen=True, kw_only=True, tag="retrying"):
    """The call failed in a way worth trying again and is tried again after ``delay``
    seconds; whatever this call streamed so far is void (the loop drops it)."""

    #: which retry this is (1 for the first)
    retry: int
    delay: float
    #: what failed, redacted (``anthropic: HTTP 529: overloaded_error: Overloaded``)
    reason: str


class Done(_Event, frozen=True, kw_only=True, tag="done"):
    stop_reason: StopReason
    usage: TokenUsage = TokenUsage()
    #: the provider's own reason, for an adapter that acts on one eve has no word for
    #: (Anthropic's ``pause_turn``); the loop reads ``stop_reason`` only
    provider_stop_reason: str | None = None


ModelEvent = (
    TextDelta
    | ReasoningDelta
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | PartCompleted
    | Retrying
    | Done
)
