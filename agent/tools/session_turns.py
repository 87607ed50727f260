"""How many turns this session has had, as counted by hooks/turn_counter.py."""

from agent.lib.turns import turns
from eve.tools import tool


@tool
def session_turns() -> dict[str, int]:
    """Tell how many turns this session has started and completed so far."""
    return dict(turns.get())
