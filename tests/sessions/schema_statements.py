"""The schema statements a block of code sends to any database, as SQLAlchemy sees them."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

#: DDL, and the reads of the catalog that the upgrade of tables and indexes makes
SCHEMA = re.compile(
    r"^\s*(CREATE|ALTER|DROP)\b|PRAGMA\s+(main\.)?(table_x?info|index_list|index_info)"
    r"|\bsqlite_master\b|\binformation_schema\b|\bpg_catalog\b|\bpg_class\b|\bpg_namespace\b",
    re.IGNORECASE,
)
#: DBOS's own check of its version at a launch with its migrations off (``run_migrations``)
DBOS_VERSION_CHECK = re.compile(r"'dbos_migrations'")


@contextmanager
def schema_statements() -> Iterator[list[str]]:
    """Collect the schema statements (``SCHEMA``) every engine runs inside the block."""
    seen: list[str] = []
    lock = threading.Lock()

    def note(_c: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        if SCHEMA.search(statement):
            with lock:
                seen.append(" ".join(statement.split()))

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", note)
