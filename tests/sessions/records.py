"""A workflow's step records as a test reads them: from eve's table, in the shape DBOS lists
a workflow's steps in (``function_name``, ``output`` as bytes), since that is where they
were kept before ``eve_step_records``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eve.sessions.settings import resolve_settings
from eve.sessions.step_records import list_records
from eve.sessions.store import SessionStore


def step_records(
    app_root: Path, workflow_id: str, env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The step records of ``workflow_id`` in the order they were made."""
    store = SessionStore(resolve_settings(app_root, env=env or {}).eve_url)
    try:
        found = store.run(lambda c: list_records(c, workflow_id))
    finally:
        store.close()
    return [{"function_name": key, "output": record.encode()} for key, record in found]
