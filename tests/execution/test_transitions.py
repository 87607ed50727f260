"""The turn's transitions are pure: a state and an outcome give the next state and action,
with no model, tool, person or recorder involved."""

from __future__ import annotations

import msgspec

from eve._usage import TokenUsage
from eve.costs import Spend
from eve.execution.transitions import apply, next_action, opening
from eve.execution.turn_actions import (
    AskLimit,
    BeginStep,
    Finish,
    LimitAnswered,
    StepBegan,
    StepJudged,
    StreamStep,
)
from eve.execution.turn_state import StepSettled, StepStart, TurnRules, TurnState
from eve.manifest import Limits
from eve.messages import user_message


def _state(*, max_turns: int = 3, limits: Limits | None = None) -> TurnState:
    rules = TurnRules(
        max_turns=max_turns,
        limits=limits or Limits(),
        compaction=None,
        system="s",
        spent_before=Spend(),
        model_prices={},
        model_id="function:test",
    )
    state = TurnState(rules=rules, at=StepStart(), history=(user_message("go"),), start=0)
    return msgspec.structs.replace(state, at=opening(state))


def test_a_step_begins_streams_and_settles_into_the_next_one() -> None:
    state = _state()
    assert next_action(state) == BeginStep(0)
    state = apply(state, StepBegan(0))
    assert next_action(state) == StreamStep(0)
    spent = Spend(usage=TokenUsage(output_tokens=2))
    settled = apply(msgspec.structs.replace(state, at=StepSettled(False)), StepBegan(1))
    assert settled.step == 1 and settled.step_spend == Spend()
    state = apply(msgspec.structs.replace(state, step_spend=spent), _judged(False, spent))
    assert state.at == StepSettled(False) and state.spend == spent
    assert next_action(state) == BeginStep(1)
    assert next_action(apply(state, _judged(True, spent))) == Finish("complete")
    assert next_action(_state(max_turns=0)) == Finish("max_turns")


def _judged(complete: bool, spend: Spend) -> StepJudged:
    return StepJudged(complete, spend=spend)


def test_a_crossed_limit_is_asked_about_until_raised_enough_or_ended() -> None:
    state = _state(limits=Limits(max_output_tokens_per_session=4))
    spent = Spend(usage=TokenUsage(output_tokens=4))
    state = apply(state, StepBegan(0))
    state = apply(msgspec.structs.replace(state, step_spend=spent), _judged(False, spent))
    asked = next_action(state)
    assert isinstance(asked, AskLimit) and asked.crossing.times_raised == 0
    raised = apply(state, LimitAnswered(asked.crossing, "raise"))
    # the raise is the turn's state (the session's checkpoint keeps it), not a shared dict
    assert raised.raised_limits == {"max_output_tokens_per_session": 1}
    assert state.raised_limits == {}
    assert next_action(raised) == BeginStep(1)  # 4 of 8 allowed: the turn goes on
    ended = apply(state, LimitAnswered(asked.crossing, "end"))
    assert ended.ended_by == "max_output_tokens_per_session"
    assert next_action(ended) == Finish("session_limit")
    # no decision (the person was not there to ask): the limit is not asked about again
    unanswered = apply(state, LimitAnswered(asked.crossing, None))
    assert next_action(unanswered) == BeginStep(1)
