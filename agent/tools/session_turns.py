"""How many turns this session has had, as counted by hooks/turn_counter.py (the root
agent's hook: a subagent's session has no such count, so it does not get this tool)."""

from agent.lib.turns import turns
from eve.tools import tool


@tool(available_in_subagents=False)
def session_turns() -> dict[str, int]:
    """Tell how many turns this session has started and completed so far."""
    return dict(turns.get())
