"""Ordering: the assistant checks the price, then orders once a person approves (and not
when they deny). Offline: each case scripts the model's replies."""

from eve.evals import (
    AnswerContains,
    Approve,
    Called,
    Case,
    CaseRun,
    Check,
    Deny,
    MaxSteps,
    Reply,
    Subset,
    ToolUse,
    Trajectory,
    define_eval,
)

ORDER_A_HAMMER = [
    Reply(calls=[ToolUse("get_price", {"item": "hammer"})]),
    Reply(calls=[ToolUse("place_order", {"item": "hammer", "quantity": 1})]),
    Reply("Done: one hammer for 12.50 EUR is ordered."),
]


def order_was_refused(run: CaseRun) -> str | None:
    refused = run.failed_calls()
    return None if refused == ["place_order"] else f"refused calls: {refused}"


default = define_eval(
    description="The shop assistant orders only what a person approves.",
    cases=[
        Case(
            "orders a hammer once approved",
            "Please order me a hammer.",
            script=ORDER_A_HAMMER,
            answers=[Approve("place_order")],
            expect=[
                Trajectory("get_price", Called("place_order", Subset({"item": "hammer"}))),
                AnswerContains("ordered"),
                MaxSteps(3),
            ],
        ),
        Case(
            "orders nothing when the person denies",
            "Please order me a hammer.",
            script=[
                *ORDER_A_HAMMER[:2],
                Reply("The order was not approved, so nothing was ordered."),
            ],
            answers=[Deny("place_order")],
            expect=[Check(order_was_refused), AnswerContains("not approved")],
        ),
    ],
)
