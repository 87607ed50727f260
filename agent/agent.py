"""The example shop assistant's configuration."""

from eve import define_agent

default = define_agent(
    model="anthropic/claude-sonnet-4-5",
    limits={"max_turns": 8},
)
