"""Conversation messages: what the loop records, the transcript stores and models receive."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

#: why a model response ended, in eve's words (each provider's own reasons map onto these)
StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "other"]


class ToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call the model asked for."""

    id: str
    name: str
    input: dict[str, Any]


class UserMessage(msgspec.Struct, frozen=True, kw_only=True, tag="user", tag_field="role"):
    text: str


class AssistantMessage(
    msgspec.Struct, frozen=True, kw_only=True, tag="assistant", tag_field="role"
):
    text: str = ""
    tool_calls: list[ToolCall] = []


class ToolResultMessage(msgspec.Struct, frozen=True, kw_only=True, tag="tool", tag_field="role"):
    """The one result every tool call gets; ``is_error`` results are shown to the model too."""

    tool_call_id: str
    content: str
    is_error: bool = False
    #: the tool that produced it; for a call made through ``eve__tool``, the catalog entry's
    #: name (the call it answers still says ``eve__tool``). Empty in transcripts from before.
    name: str = ""


Message = UserMessage | AssistantMessage | ToolResultMessage
