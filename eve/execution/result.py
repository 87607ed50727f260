"""``RunResult``: what one turn of ``run_agent`` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eve._usage import TokenUsage
from eve.costs import Cost, Spend
from eve.events import TurnStop
from eve.execution.limits import LimitName
from eve.execution.turn_state import TurnState
from eve.messages import AssistantMessage, Message, StopReason


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """How the turn stopped, the whole history after it, and what it used and cost."""

    stop_reason: TurnStop
    #: the whole history: prior messages, the new user message and everything recorded after
    messages: list[Message]
    usage: TokenUsage
    #: what ``usage`` cost (``eve.costs``): priced per model call, subagents included
    cost: Cost = field(default_factory=Cost)
    #: the session's tokens and cost so far, this turn included
    session: Spend = field(default_factory=Spend)
    #: the validated final answer of an agent with ``output_schema``: an instance of its
    #: pydantic class, or the JSON object for a plain JSON Schema; None without one
    output: Any = None
    #: the session limit a person chose to end the session on (``execution.limits``)
    ended_by: LimitName | None = None
    #: why the last model response ended: ``max_tokens`` means the answer was cut off at
    #: the output token limit (``model_settings.max_output_tokens``)
    finish_reason: StopReason | None = None
    #: the turn's final state (``execution.turn_state``): the session's ``once()``
    #: approvals and raised limits after it, which its checkpoint keeps
    state: TurnState | None = None

    @property
    def truncated(self) -> bool:
        """Whether the last answer was cut at the output token limit."""
        return self.finish_reason == "max_tokens"

    @property
    def final_text(self) -> str:
        """The text of the last assistant message that has any."""
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage) and message.text:
                return message.text
        return ""
