"""SQLite engines for both session files: WAL, so readers never block the writer.

In WAL mode ``synchronous=NORMAL`` syncs at checkpoints rather than at every commit: a
process crash (SIGKILL included) loses nothing, while a power cut or OS crash can roll back
the last commits before a checkpoint. A step whose record is rolled back that way re-runs,
exactly as a step interrupted mid-way does. ``EVE_SQLITE_SYNCHRONOUS=FULL`` syncs every
commit instead (its cost per step is measured in bench/README.md).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine


def sqlite_engine(url: str, *, synchronous: str = "NORMAL", immediate: bool = False) -> Engine:
    """An engine on the SQLite file at ``url``.

    ``immediate`` is for DBOS's system database, which eve hands DBOS ready-made: it sets
    what DBOS's own SQLite engine sets (``BEGIN IMMEDIATE`` to serialize writers, foreign
    keys on) besides the journal settings.
    """
    engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    def on_connect(connection: Any, _record: Any) -> None:
        if immediate:
            connection.isolation_level = "IMMEDIATE"
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute("PRAGMA busy_timeout=30000")
        if immediate:
            cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    sa.event.listen(engine, "connect", on_connect)
    return engine
