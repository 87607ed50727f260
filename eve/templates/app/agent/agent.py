"""The agent's configuration: its model and its limits (docs/runtime.md)."""

from eve import define_agent

default = define_agent(
    # needs ANTHROPIC_API_KEY; without it `eve run` and `eve dev` use the offline model and
    # say so. Any "provider/model" id works (docs/models.md).
    model="anthropic/claude-sonnet-4-5",
    limits={"max_turns": 8},
)
