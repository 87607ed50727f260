"""``TurnState``: everything a turn knows between two actions, as one frozen value.

The turn is a state machine (``execution.transitions``): ``next_action(state)`` says what
the turn does next from where it is (``state.at``), the driver (``execution.loop``)
performs that and ``apply(state, outcome)`` returns the state after it. Nothing here is
shared or mutated: the session's ``once()`` approvals and raised limits are fields, so the
final state (``RunResult.state``) is what the session's checkpoint is built from.

The positions (``Position``), where the turn is::

    StepStart ─▶ StepBegun ─(compaction due)─▶ Compacted ─▶ (stream) ─┐
        ▲           └──────────────(stream)─────────────────────────┤
        │        Asking · Tasking · Listing · Batching ─▶ Resuming ─▶ (part)
        │                         (part ran all calls) ─▶ StepRan ─▶ Settled
        └──────────────────────────(next step)───────────────────────┘
                                        Settled / an aborted part ─▶ Done
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from eve.costs import Spend
from eve.events import TurnStop
from eve.execution.checkpoints import PersonAsk
from eve.execution.compaction import Policy
from eve.execution.limits import LimitName
from eve.execution.output import Accepted
from eve.execution.response import ModelResponse
from eve.execution.tool_calls import CallOutcome
from eve.manifest import Limits, ModelPrice
from eve.messages import Message, StopReason


@dataclass(frozen=True, kw_only=True)
class TurnRules:
    """What the agent's configuration says about the turn; fixed while it runs."""

    #: at most this many model requests (steps)
    max_turns: int
    limits: Limits
    #: when to compact (None: the node does not)
    compaction: Policy | None
    #: the system prompt, as compaction counts it
    system: str
    #: the session's tokens and cost before this turn
    spent_before: Spend
    model_prices: Mapping[str, ModelPrice]
    #: the model asked first (a response names its own model when a fallback answered)
    model_id: str


# --- where the turn is (not JSON: these never leave the process) -------------------------


class StepStart(msgspec.Struct, frozen=True):
    """Step ``state.step`` is about to begin."""


class StepBegun(msgspec.Struct, frozen=True):
    """The step began (``step.started``): compact if due, then stream."""


class Compacted(msgspec.Struct, frozen=True):
    """The history before the step's request was compacted (or trimming took over)."""


class _InStep(msgspec.Struct, frozen=True):
    """Between two parts of the step whose model ``response`` this is."""

    response: ModelResponse


class Asking(_InStep, frozen=True):
    """A part stopped at calls a person must approve; ``asks`` are asked in one round."""

    asks: tuple[PersonAsk, ...]


class Tasking(_InStep, frozen=True):
    """A part stopped at ``call``, which runs as a task."""

    call: int


class Listing(_InStep, frozen=True):
    """A part stopped at ``call``, which needs the catalog's MCP servers listed."""

    call: int
    announce: bool


class Batching(_InStep, frozen=True):
    """A part stopped before the calls ``first`` … ``until - 1``, which run concurrently."""

    first: int
    until: int


class Fresh(msgspec.Struct, frozen=True):
    """The part begins at its first call with nothing settled about it."""


class Answered(msgspec.Struct, frozen=True):
    """A person answered about the calls the last part stopped at (``state.answers``)."""


class Settled(msgspec.Struct, frozen=True):
    """The call the part begins at ran as a task: this is its result."""

    outcome: CallOutcome


class Listed(msgspec.Struct, frozen=True):
    """The MCP servers were listed; ``announce``: the calls are not announced yet."""

    announce: bool


#: how a part after the first goes on
Resume = Fresh | Answered | Settled | Listed


class Resuming(_InStep, frozen=True):
    """The next part runs the calls from ``first`` on, resumed by ``resume``."""

    first: int
    resume: Resume


class StepRan(msgspec.Struct, frozen=True):
    """Every call of the step has its result; ``calls``: how many the response made."""

    calls: int


class StepSettled(msgspec.Struct, frozen=True):
    """The step is settled (``complete``: the turn has its answer); ``checked``: a person
    was asked about a crossed limit and gave no decision, so limits are not asked again."""

    complete: bool
    checked: bool = False


class Done(msgspec.Struct, frozen=True):
    """The turn stopped."""

    stop: TurnStop


Position = (
    StepStart
    | StepBegun
    | Compacted
    | Asking
    | Tasking
    | Listing
    | Batching
    | Resuming
    | StepRan
    | StepSettled
    | Done
)


class PersonAnswer(msgspec.Struct, frozen=True):
    """What a person said about one call: the rule that asked, and whether they approved."""

    rule: str
    approved: bool


class TurnState(msgspec.Struct, frozen=True, kw_only=True):
    """One turn between two actions.

    A msgspec Struct rather than a dataclass only because the driver replaces it several
    times a step and ``structs.replace`` is several times cheaper; it is never encoded.
    """

    rules: TurnRules
    at: Position
    #: the whole history: the session's, then this turn's messages from ``start`` on
    history: tuple[Message, ...]
    start: int
    step: int = 0
    #: the turn's tokens and cost so far, and the current step's
    spend: Spend = Spend()
    step_spend: Spend = Spend()
    #: tools approved under ``once()`` in this session
    approved_once: frozenset[str] = frozenset()
    #: how many times a person raised each session limit in this session
    raised_limits: Mapping[str, int] = {}
    #: the current step's answers from a person, by the call's index in the response
    answers: Mapping[int, PersonAnswer] = {}
    #: a call of the current step ended the turn (``ends_turn``)
    ends_turn: bool = False
    #: a compaction failed this turn: requests are trimmed to this many tokens instead
    trim_to: int | None = None
    #: the session limit a person ended the session on
    ended_by: LimitName | None = None
    #: why the last step's model response ended (``max_tokens``: it was cut off), and
    #: the model that gave it
    finish: StopReason | None = None
    answered_by: str | None = None
    #: the accepted typed answer (``output_schema``)
    answer: Accepted | None = None

    @property
    def session_spend(self) -> Spend:
        """The session's tokens and cost so far, this turn's included."""
        return self.rules.spent_before + self.spend

    @property
    def turn_messages(self) -> tuple[Message, ...]:
        return self.history[self.start :]

    def with_messages(self, *messages: Message, **changes: Any) -> TurnState:
        """This state with ``messages`` recorded after the history, and ``changes``."""
        return msgspec.structs.replace(self, history=self.history + messages, **changes)
