"""What a tool's execute receives besides its input."""

from __future__ import annotations

from dataclasses import dataclass, field

from eve.cancellation import CancelSignal


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """The call a tool is serving.

    Attributes:
        session_id: the session the call belongs to.
        call_id: the model's id for this tool call.
        tool_name: the name the model called.
        node_id: the agent node whose tool this is.
        signal: set when the turn is cancelled; long tools should check it.
    """

    session_id: str
    call_id: str
    tool_name: str
    node_id: str = "__root__"
    signal: CancelSignal = field(default_factory=CancelSignal)
