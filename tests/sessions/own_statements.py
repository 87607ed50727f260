"""The statements an engine runs on the calling thread: a store's engine also serves its
background threads (a WAL checkpoint on SQLite, ``wal_checkpoints.py``; the notifier's
``NOTIFY`` on PostgreSQL, ``pg_notifier.py``), whose statements land whenever they run."""

from __future__ import annotations

import threading
from typing import Any

import sqlalchemy as sa


def own_statements(engine: sa.Engine) -> list[str]:
    """A list that gathers, from now on, each statement ``engine`` runs on this thread."""
    seen: list[str] = []
    here = threading.get_ident()

    def note(_c: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        if threading.get_ident() == here:
            seen.append(statement)

    sa.event.listen(engine, "before_cursor_execute", note)
    return seen
