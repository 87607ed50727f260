"""Each kind of expectation, passing and failing, against one real run of the example agent."""

from __future__ import annotations

import pytest

from eve.evals import (
    AnswerContains,
    AnswerEquals,
    AnswerMatches,
    AnswerSchema,
    Approve,
    Called,
    Case,
    CaseRun,
    Check,
    Equals,
    Expectation,
    MaxCost,
    MaxSteps,
    MaxTokens,
    OutputField,
    Reply,
    Subset,
    ToolUse,
    Trajectory,
    Where,
)
from eve.evals.expectations import check
from eve.evals.runner import RunOutcome
from eve.execution.setup import AgentSetup
from tests.evals.helpers import run_one

ANSWER = '{"ordered": "hammer", "order": {"quantity": 2, "total": 25.0}}'
CASE = Case(
    "orders two hammers after research",
    "Order two hammers, and tell me last year's price.",
    script={
        "__root__": [
            Reply(calls=[ToolUse("get_price", {"item": "hammer"})]),
            Reply(calls=[ToolUse("researcher", {"message": "hammer a year ago"})]),
            Reply(calls=[ToolUse("place_order", {"item": "hammer", "quantity": 2})]),
            Reply(ANSWER),
        ],
        "researcher": [
            Reply(calls=[ToolUse("get_price", {"item": "hammer", "months_ago": 12})]),
            Reply("11.25 EUR"),
        ],
    },
    answers=[Approve("place_order")],
)


@pytest.fixture(scope="module")
def outcome(setup: AgentSetup) -> RunOutcome:
    return run_one(setup, CASE)


def test_the_run_finished_with_every_tool_call_recorded(outcome: RunOutcome) -> None:
    assert outcome.passed, outcome.first_failure
    assert [c.name for c in outcome.run.calls()] == [
        "get_price",
        "researcher",
        "place_order",
    ]
    assert [c.name for c in outcome.run.calls("researcher")] == ["get_price"]
    assert outcome.run.steps == 4 and outcome.run.final_text == ANSWER


def _no_failed_calls(run: CaseRun) -> bool:
    return not run.failed_calls()


HAMMER = Called("get_price", Equals({"item": "hammer"}))
CASES: list[tuple[Expectation, bool]] = [
    (Trajectory(HAMMER, "researcher", Called("place_order", Subset({"quantity": 2}))), True),
    (Trajectory("get_price", "place_order"), False),  # exact: the researcher call is missing
    (Trajectory("researcher", "get_price"), False),  # exact: wrong order
    (Trajectory("get_price", "place_order", order="in_order"), True),
    (Trajectory("place_order", "get_price", order="in_order"), False),
    (Trajectory("place_order", "get_price", order="any_order"), True),
    (Trajectory("place_order", "place_order", order="any_order"), False),
    (Trajectory(Called("place_order", Subset({"quantity": 3})), order="any_order"), False),
    (Trajectory(Called("place_order", Where(lambda i: i["quantity"] > 1, "quantity > 1"))), False),
    (
        Trajectory(
            Called("get_price", Where(lambda i: i["months_ago"] == 12, "a year ago")),
            node="researcher",
        ),
        True,
    ),
    (Trajectory("get_price", node="researcher", order="exact"), True),
    (Trajectory(node="researcher"), False),
    (AnswerContains("hammer"), True),
    (AnswerContains("HAMMER"), False),
    (AnswerContains("HAMMER", ignore_case=True), True),
    (AnswerMatches(r'"total": \d+\.\d'), True),
    (AnswerMatches(r"^Sorry"), False),
    (AnswerEquals(f"  {ANSWER}\n"), True),
    (AnswerEquals("hammer"), False),
    (AnswerSchema({"type": "object", "required": ["ordered", "order"]}), True),
    (AnswerSchema({"type": "object", "properties": {"ordered": {"type": "integer"}}}), False),
    (OutputField("order.quantity", Equals(2)), True),
    (OutputField("order.total", Where(lambda t: t > 100, "over 100")), False),
    (OutputField("order.missing", Equals(1)), False),
    (MaxSteps(4), True),
    (MaxSteps(3), False),
    (MaxTokens(100_000), True),
    (MaxTokens(10), False),
    (MaxCost(0.01), True),
    (Check(_no_failed_calls), True),
    (Check(lambda run: run.steps > 10, name="many steps"), False),
    (Check(lambda run: "too few steps"), False),
]


@pytest.mark.parametrize(("expectation", "passes"), CASES)
def test_expectation(outcome: RunOutcome, expectation: Expectation, passes: bool) -> None:
    result = check(expectation, outcome.run)
    assert result.passed is passes, result


def test_a_failure_says_what_was_seen(outcome: RunOutcome) -> None:
    trajectory = check(Trajectory("get_price", "place_order"), outcome.run)
    assert trajectory.name == "trajectory exact [get_price, place_order]"
    assert trajectory.seen.startswith('calls: get_price({"item": "hammer"}), researcher(')
    assert check(MaxSteps(3), outcome.run).seen == "4 steps"
    assert check(Check(lambda run: "too few steps"), outcome.run).seen == "too few steps"
    schema = check(AnswerSchema({"properties": {"ordered": {"type": "integer"}}}), outcome.run)
    assert "is not of type 'integer'" in schema.seen and "$.ordered" in schema.seen


def test_an_answer_that_is_not_json_fails_schema_checks(setup: AgentSetup) -> None:
    plain = run_one(
        setup,
        Case(
            "plain",
            "hi",
            script=[Reply("Hello there.")],
            expect=[AnswerSchema({"type": "object"}), OutputField("a", Equals(1))],
        ),
    )
    seen = [c.seen for c in plain.checks[1:]]
    assert seen[0].startswith("the answer is not JSON") and not plain.passed
    assert seen[1] == "no typed output and the answer is not JSON"
