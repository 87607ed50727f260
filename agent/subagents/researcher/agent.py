"""A subagent that researches price history."""

from eve import define_agent

default = define_agent(
    description="Researches how an item's price changed over the last year.",
    model="anthropic/claude-haiku-4-5",
    limits={"max_turns": 4},
)
