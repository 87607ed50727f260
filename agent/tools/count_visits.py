"""The leaky counter: a module global is one value for every session in the process.

`eve compile` warns about it; compare count_session_visits, which uses define_state.
"""

from eve.tools import tool

visits = {"count": 0}


@tool
def count_visits() -> dict[str, int]:
    """Count how many times this tool was called (shared by every session: a bug)."""
    visits["count"] += 1
    return {"count": visits["count"]}
