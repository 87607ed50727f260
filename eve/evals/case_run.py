"""``CaseRun``: what one run of a case left behind (events, results), as checks read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from eve._usage import TokenUsage
from eve.events import ActionRequest, ActionResult, ActionsRequested, SessionEvent, StepStarted
from eve.execution.result import RunResult
from eve.manifest import ROOT_NODE_ID
from eve.messages import Message


def _node_of(event: SessionEvent) -> str:
    return event.data.node_id or ROOT_NODE_ID


@dataclass(frozen=True, kw_only=True)
class CaseRun:
    """One run of a case: every event of its session (subagents' included), each turn's
    result, and why it stopped early if it did."""

    events: tuple[SessionEvent, ...]
    #: one per message sent whose turn finished
    results: tuple[RunResult, ...]
    #: the failure that ended the run before its last turn finished (a timeout, an error
    #: the turn raised), as ``Name: message``; None when every turn finished
    error: str | None = None
    #: approvals and questions that asked and found no answer in the case
    unanswered: tuple[str, ...] = ()
    #: the model id the run used
    model: str = ""
    seconds: float = 0.0
    #: filled by the checks of the run: each check's name → what it saw
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def final_text(self) -> str:
        """The last turn's final answer text ("" when no turn finished)."""
        return self.results[-1].final_text if self.results else ""

    @property
    def output(self) -> Any:
        """The last turn's typed answer (an agent with ``output_schema``), else None."""
        return self.results[-1].output if self.results else None

    @property
    def messages(self) -> list[Message]:
        """The whole history after the last finished turn."""
        return self.results[-1].messages if self.results else []

    def calls(self, node: str = ROOT_NODE_ID) -> list[ActionRequest]:
        """The tool calls a node asked for, in order (``researcher`` for a subagent's)."""
        return [
            action
            for event in self.events
            if isinstance(event, ActionsRequested) and _node_of(event) == node
            for action in event.data.actions
        ]

    def failed_calls(self, node: str = ROOT_NODE_ID) -> list[str]:
        """The names of a node's tool calls whose result was an error or a refusal."""
        return [
            event.data.name
            for event in self.events
            if isinstance(event, ActionResult)
            and _node_of(event) == node
            and event.data.status != "completed"
        ]

    @property
    def steps(self) -> int:
        """How many model requests the root agent made, over every turn."""
        return sum(isinstance(e, StepStarted) and _node_of(e) == ROOT_NODE_ID for e in self.events)

    @property
    def usage(self) -> TokenUsage:
        """Tokens of every turn, subagents included."""
        total = TokenUsage()
        for result in self.results:
            total = total + result.usage
        return total

    @property
    def tokens(self) -> int:
        usage = self.usage
        return usage.total_input_tokens + usage.output_tokens

    @property
    def cost_usd(self) -> Decimal | None:
        """What every turn cost; None when no call was priced (offline models)."""
        priced = [r.cost.usd for r in self.results if r.cost.usd is not None]
        return sum(priced, Decimal(0)) if priced else None
