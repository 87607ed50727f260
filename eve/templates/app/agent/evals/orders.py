"""The agent's test: `eve eval` runs it offline (each case scripts the model's replies), so
it checks your tools and the agent's wiring without an API key. With a key, run it against
the real model with `eve eval --model anthropic/claude-sonnet-4-5` (docs/evals.md)."""

from eve.evals import AnswerContains, Called, Case, Reply, ToolUse, Trajectory, define_eval

default = define_eval(
    description="The assistant looks an order up before it answers.",
    cases=[
        Case(
            "tells the status of a known order",
            "Where is my order A-1001?",
            script=[
                Reply(calls=[ToolUse("lookup_order", {"order_id": "A-1001"})]),
                Reply("Your order A-1001 has shipped with DHL and arrives in about 2 days."),
            ],
            expect=[Trajectory(Called("lookup_order")), AnswerContains("shipped")],
        ),
    ],
)
