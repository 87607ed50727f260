"""The turn's transitions: ``next_action(state)`` and ``apply(state, outcome)``, both pure.

They read and return ``TurnState`` values and never wait, emit or record: what the turn
does (``turn_actions.Action``) is performed by the driver (``execution.loop``), which hands
back what came of it (``turn_actions.Outcome``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

import msgspec

from eve.costs import Spend, price
from eve.events import TurnStop
from eve.execution import turn_actions as act  # actions and outcomes: act.BeginStep, act.StepBegan
from eve.execution.checkpoints import Aborted, AsksPerson, NeedsListing, RanAll, RunsBatch
from eve.execution.checkpoints import StartsTask as StartsTaskPart
from eve.execution.compaction import (
    CompactionRecord,
    Summarized,
    SummaryFailed,
    needs_compaction,
    plan,
)
from eve.execution.limits import crossed
from eve.execution.response import ModelResponse
from eve.execution.tool_calls import ABORTED_BEFORE_EXECUTION, CallOutcome, outcome
from eve.execution.turn_state import (
    Answered,
    Asking,
    Batching,
    Compacted,
    Done,
    Fresh,
    Listed,
    Listing,
    Position,
    Resuming,
    Settled,
    StepBegun,
    StepRan,
    StepSettled,
    StepStart,
    Tasking,
    TurnState,
)
from eve.messages import Message, model_view, summary_message

replace = msgspec.structs.replace


def opening(state: TurnState) -> Position:
    """Where a turn with no step run yet starts."""
    return StepStart() if state.rules.max_turns > 0 else Done("max_turns")


def next_action(state: TurnState) -> act.Action:
    """What the turn does next from ``state.at``."""
    at, step = state.at, state.step
    # the positions of every step first, in their order: a class pattern that misses
    # costs a check
    match at:
        case StepStart():
            return act.BeginStep(step)
        case StepBegun():
            folded = _due(state)
            return act.StreamStep(step) if folded is None else act.Compact(step, folded)
        case StepRan(calls=calls):
            return act.SettleStep(step, complete=state.ends_turn or not calls)
        case StepSettled(complete=complete, checked=checked):
            return _after_step(state, complete=complete, checked=checked)
        case Compacted():
            return act.StreamStep(step)
        case Asking():
            return act.AskPerson(step, at)
        case Tasking():
            return act.StartTask(step, at)
        case Listing():
            return act.ListCatalog(step, at)
        case Batching():
            return act.RunBatch(step, at)
        case Resuming():
            return act.RunCalls(step, at)
        case Done(stop=stop):
            return act.Finish(stop)
        case _:
            assert_never(at)


def _due(state: TurnState) -> int | None:
    """How many messages a compaction before this step's request folds; None: none is due
    (no policy, a compaction failed this turn, below the threshold, nothing to fold)."""
    policy = state.rules.compaction
    if policy is None or state.trim_to is not None:
        return None
    if not needs_compaction(policy, state.rules.system, state.history):
        return None
    return plan(model_view(state.history), policy.keep_tokens)


def _after_step(state: TurnState, *, complete: bool, checked: bool) -> act.Action:
    rules = state.rules
    if not checked:
        crossing = crossed(rules.limits, state.raised_limits, state.session_spend, state.step)
        if crossing is not None:
            return act.AskLimit(crossing)
    if complete:
        return act.Finish("complete")
    if state.step + 1 >= rules.max_turns:
        return act.Finish("max_turns")
    return act.BeginStep(state.step + 1)


def apply(state: TurnState, result: act.Outcome) -> TurnState:
    """The state after ``result`` of the action ``next_action(state)`` chose."""
    match result:
        case act.StepBegan(step=step):
            return replace(
                state, at=StepBegun(), step=step, step_spend=Spend(), answers={}, ends_turn=False
            )
        case act.PartRan():
            return _part_ran(state, result)
        case act.StepJudged(complete=complete, spend=spend, answer=answer, tell=tell):
            told = () if tell is None else (tell,)
            kept = state.answer if answer is None else answer
            return state.with_messages(*told, spend=spend, at=StepSettled(complete), answer=kept)
        case act.CompactionDone(record=record):
            return _compacted(state, record)
        case act.BatchRan():
            return _batch_ran(state, result)
        case act.PeopleAnswered():
            return _answered(state, result)
        case act.TaskRan(outcome=settled):
            at = state.at
            assert isinstance(at, Tasking), "a task runs from Tasking"
            # a subagent's tokens are the caller's: they count in this step, turn, session
            spent = state.step_spend if settled.spend is None else state.step_spend + settled.spend
            resuming = Resuming(at.response, at.call, Settled(settled))
            return replace(state, step_spend=spent, at=resuming)
        case act.CatalogListed():
            at = state.at
            assert isinstance(at, Listing), "the catalog is listed from Listing"
            return replace(state, at=Resuming(at.response, at.call, Listed(at.announce)))
        case act.LimitAnswered():
            return _limit_answered(state, result)
        case _:
            assert_never(result)


def _compacted(state: TurnState, record: CompactionRecord) -> TurnState:
    match record:
        case SummaryFailed():
            policy = state.rules.compaction
            assert policy is not None, "only a node that compacts compacts"
            return replace(state, at=Compacted(), trim_to=policy.threshold_tokens)
        case Summarized():
            # the summary's tokens count toward the step (and so the turn and the session)
            spent = Spend(
                usage=record.usage,
                cost=price(record.model, record.usage, state.rules.model_prices),
            )
            summary = summary_message(record.summary, folded=record.folded, kept=record.kept)
            return state.with_messages(summary, at=Compacted(), step_spend=state.step_spend + spent)
        case _:
            assert_never(record)


def _part_ran(state: TurnState, ran: act.PartRan) -> TurnState:
    part, response = ran.part, ran.response
    state = _recorded(state, part.outcomes, part.response)
    match part:
        case RanAll():
            return replace(state, at=StepRan(len(ran.calls)))
        case Aborted():
            rest = ran.calls[part.next_call :]
            closed = [outcome(c, ABORTED_BEFORE_EXECUTION, "failed").result for c in rest]
            return state.with_messages(*closed, at=Done("aborted"))
        case AsksPerson(asks=asks):
            return replace(state, at=Asking(response, tuple(asks)))
        case StartsTaskPart(call=call):
            return replace(state, at=Tasking(response, call))
        case NeedsListing(call=call, announce=announce):
            return replace(state, at=Listing(response, call, announce))
        case RunsBatch(until=until):
            return replace(state, at=Batching(response, part.next_call, until))
        case _:
            assert_never(part)


def _recorded(
    state: TurnState, outcomes: Sequence[CallOutcome], response: ModelResponse | None = None
) -> TurnState:
    """A part's model response (the step's first part has one) and its calls' results, in
    the history and the step's spend. The response is priced by the model that answered
    (a fallback chain's may not be the first); an MCP server's sampling during a call used
    the agent's model, so it counts too."""
    spend, ends = state.step_spend, state.ends_turn
    said: list[Message] = []
    finish, answered_by = state.finish, state.answered_by
    if response is not None:
        answered_by = response.model or state.rules.model_id
        cost = price(answered_by, response.usage, state.rules.model_prices)
        spend = spend + Spend(usage=response.usage, cost=cost)
        finish = response.finish_reason
        if response.text or response.tool_calls:
            said.append(response.message())
    for result in outcomes:
        if result.sampled is not None:
            spend = spend + result.sampled
        ends = ends or result.ends_turn
        said.append(result.result)
    return state.with_messages(
        *said, step_spend=spend, ends_turn=ends, finish=finish, answered_by=answered_by
    )


def _batch_ran(state: TurnState, ran: act.BatchRan) -> TurnState:
    at = state.at
    assert isinstance(at, Batching), "a batch runs from Batching"
    state = _recorded(state, ran.outcomes)
    if ran.cancelled:
        rest = ran.calls[at.until :]
        closed = [outcome(c, ABORTED_BEFORE_EXECUTION, "failed").result for c in rest]
        return state.with_messages(*closed, at=Done("aborted"))
    if at.until >= len(ran.calls):
        return replace(state, at=StepRan(len(ran.calls)))
    return replace(state, at=Resuming(at.response, at.until, Fresh()))


def _answered(state: TurnState, answered: act.PeopleAnswered) -> TurnState:
    at = state.at
    assert isinstance(at, Asking), "people answer from Asking"
    answers = {**state.answers, **dict(answered.answers)}
    once = {
        tool
        for (_, answer), tool in zip(answered.answers, answered.tools, strict=True)
        if answer.approved and answer.rule == "once"
    }
    approved_once = state.approved_once | once if once else state.approved_once
    resuming = Resuming(at.response, at.asks[0].call, Answered())
    return replace(state, answers=answers, approved_once=approved_once, at=resuming)


def _limit_answered(state: TurnState, answered: act.LimitAnswered) -> TurnState:
    at = state.at
    assert isinstance(at, StepSettled), "limits are asked about once a step is settled"
    crossing, decision = answered.crossing, answered.decision
    match decision:
        case None:
            # no decision (the person was not asked after all): limits are not asked
            # about again before the next step
            return replace(state, at=StepSettled(at.complete, checked=True))
        case "raise":
            raised = {**state.raised_limits, crossing.limit: crossing.times_raised + 1}
            return replace(state, raised_limits=raised)
        case "end":
            stop: TurnStop = "complete" if at.complete else "session_limit"
            return replace(state, ended_by=crossing.limit, at=Done(stop))
        case _:
            assert_never(decision)
