"""The right counter: per-session state that each session starts fresh."""

from eve.context import define_state
from eve.tools import tool

session_visits = define_state("session_visits", 0)


@tool
def count_session_visits() -> dict[str, int]:
    """Count how many times this tool was called in this session."""
    return {"count": session_visits.update(lambda n: n + 1)}
