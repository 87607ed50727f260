"""Per-session turn counts: kept by hooks/turn_counter.py, read by tools/session_turns.py."""

from eve.context import define_state

turns = define_state("turns", {"started": 0, "completed": 0})


def bump(field: str) -> dict[str, int]:
    return turns.update(lambda counts: {**counts, field: counts[field] + 1})
