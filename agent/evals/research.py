"""Price history: the assistant delegates to the researcher, which reads last year's price.
Offline: the script answers for both nodes, keyed by node id."""

from eve.evals import (
    AnswerMatches,
    Called,
    Case,
    Equals,
    Reply,
    Subset,
    ToolUse,
    Trajectory,
    define_eval,
)

default = define_eval(
    description="Questions about price history go to the researcher subagent.",
    cases=[
        Case(
            "asks the researcher about last year's price",
            "How did the price of a hammer change over the last year?",
            script={
                "__root__": [
                    Reply(calls=[ToolUse("researcher", {"message": "Hammer price a year ago?"})]),
                    Reply("A hammer cost 11.25 EUR a year ago and costs 12.50 EUR now."),
                ],
                "researcher": [
                    Reply(calls=[ToolUse("get_price", {"item": "hammer", "months_ago": 12})]),
                    Reply("It was 11.25 EUR twelve months ago."),
                ],
            },
            expect=[
                Trajectory("researcher"),
                Trajectory(
                    Called("get_price", Subset({"item": "hammer", "months_ago": 12})),
                    node="researcher",
                ),
                Trajectory(
                    Called("get_price", Equals({"item": "hammer", "months_ago": 12})),
                    node="researcher",
                    order="any_order",
                ),
                AnswerMatches(r"11\.25 EUR"),
            ],
        ),
    ],
)
