"""What a turn does next (``Action``) and what came of it (``Outcome``): two closed unions.

An action between two parts of a step carries the position it is taken at
(``turn_state``): what it needs to know is where the turn is.

``transitions.next_action`` picks an action from the state; the driver (``execution.loop``)
performs it, which is where the model, the tools, people and the recorder are; and
``transitions.apply`` takes the outcome to the next state. Actions and outcomes are frozen
values, so a transition can be tested without any of them.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec

from eve.costs import Spend
from eve.events import TurnStop
from eve.execution.checkpoints import StepPart
from eve.execution.compaction import CompactionRecord
from eve.execution.limits import LimitCrossed, LimitDecision
from eve.execution.output import Accepted
from eve.execution.response import ModelResponse
from eve.execution.tool_calls import CallOutcome
from eve.execution.turn_state import (
    Asking,
    Batching,
    Listing,
    PersonAnswer,
    Resuming,
    Tasking,
)
from eve.messages import Message, ToolCall

P = TypeVar("P")

# --- actions --------------------------------------------------------------------------------


class BeginStep(msgspec.Struct, frozen=True):
    """Announce step ``step`` (``step.started``)."""

    step: int


class Compact(msgspec.Struct, frozen=True):
    """Fold the oldest ``folded`` messages the model is sent into a summary (a record)."""

    step: int
    folded: int


class StreamStep(msgspec.Struct, frozen=True):
    """The step's first part: ask the model, then run the calls it makes."""

    step: int


class _At(msgspec.Struct, Generic[P], frozen=True):
    """An action of step ``step`` at the position ``at`` between two of its parts."""

    step: int
    at: P


class RunCalls(_At[Resuming], frozen=True):
    """A later part: run the response's calls from ``at.first`` on, resumed by ``at.resume``."""


class RunBatch(_At[Batching], frozen=True):
    """Run the calls ``at.first`` … ``at.until - 1`` concurrently, each its own record."""


class AskPerson(_At[Asking], frozen=True):
    """Ask a person about every call in ``at.asks``, in one round."""


class StartTask(_At[Tasking], frozen=True):
    """Run call ``at.call`` as a task (``task.started`` … ``task.settled``)."""


class ListCatalog(_At[Listing], frozen=True):
    """List the catalog's MCP servers' tools (a record), between two parts."""


class SettleStep(msgspec.Struct, frozen=True):
    """Close the step (``step.completed``) and judge whether the turn has its answer;
    ``complete``: the step would end the turn (a call ended it, or it made none)."""

    step: int
    complete: bool


class AskLimit(msgspec.Struct, frozen=True):
    """Ask whoever can raise it about a crossed session limit."""

    crossing: LimitCrossed


class Finish(msgspec.Struct, frozen=True):
    """Stop the turn."""

    stop: TurnStop


Action = (
    BeginStep
    | Compact
    | StreamStep
    | RunCalls
    | RunBatch
    | AskPerson
    | StartTask
    | ListCatalog
    | SettleStep
    | AskLimit
    | Finish
)

# --- outcomes -------------------------------------------------------------------------------


class StepBegan(msgspec.Struct, frozen=True):
    step: int


class CompactionDone(msgspec.Struct, frozen=True):
    record: CompactionRecord


class PartRan(msgspec.Struct, frozen=True):
    """A part as produced or replayed; ``calls``: the response's calls as they run (an
    ``eve__tool`` call as the entry it names), for the results of calls not run."""

    part: StepPart
    #: the step's response (a later part records none of its own)
    response: ModelResponse
    calls: tuple[ToolCall, ...]


class BatchRan(msgspec.Struct, frozen=True):
    """The results of a concurrent batch, in the model's order."""

    outcomes: tuple[CallOutcome, ...]
    #: the response's calls as they run
    calls: tuple[ToolCall, ...]
    #: the turn was cancelled meanwhile: the calls after the batch are not run
    cancelled: bool = False


class PeopleAnswered(msgspec.Struct, frozen=True):
    """The answers of one round, by call index; ``tools`` names each call's tool."""

    answers: tuple[tuple[int, PersonAnswer], ...]
    tools: tuple[str, ...]


class TaskRan(msgspec.Struct, frozen=True):
    outcome: CallOutcome


class CatalogListed(msgspec.Struct, frozen=True):
    pass


class StepJudged(msgspec.Struct, frozen=True):
    """The step is closed: ``complete`` when the turn has its answer; ``answer``: the
    typed one accepted; ``tell``: what an invalid answer sends back to the model."""

    complete: bool
    #: the turn's spend with the step's (as ``step.completed`` told it)
    spend: Spend
    answer: Accepted | None = None
    tell: Message | None = None


class LimitAnswered(msgspec.Struct, frozen=True):
    """A person's decision about ``crossing``; None: they gave none."""

    crossing: LimitCrossed
    decision: LimitDecision | None


Outcome = (
    StepBegan
    | CompactionDone
    | PartRan
    | BatchRan
    | PeopleAnswered
    | TaskRan
    | CatalogListed
    | StepJudged
    | LimitAnswered
)
