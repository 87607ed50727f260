"""What a session's writes left in some tables, comparable with another session's: for the
tests that write the same thing two ways (a PostgreSQL function and the transaction it
stands for) and compare the rows."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from eve.sessions.store import SessionStore

#: the columns that are clocks (each way reads its own), left out of a comparison
CLOCKS = frozenset({"created_at", "recorded_at", "accepted_at"})


def plain(value: Any, session_id: str) -> Any:
    """``value`` with the session's id as ``S``."""
    return value.replace(session_id, "S") if isinstance(value, str) else value


def session_rows(
    store: SessionStore, session_id: str, queries: dict[str, sa.Select[Any]]
) -> dict[str, list[dict[str, Any]]]:
    """Each query's rows (the session's, by name), its id as ``S``, without clocks, sorted."""
    found = {}
    for name, query in queries.items():
        rows = store.read(lambda c, q=query: c.execute(q).mappings().all())  # type: ignore[misc]
        found[name] = sorted(
            ({k: plain(v, session_id) for k, v in row.items() if k not in CLOCKS} for row in rows),
            key=repr,
        )
    return found
