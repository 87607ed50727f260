"""An engine on a SQLite session database as memory opens it: WAL and a 30 s busy timeout,
so the stdlib engine and the vector engine (``vectors.py``) on one file serialize their
writes like any two connections and readers never block the writer."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url


def sqlite_engine(
    url: sa.URL | str,
    *,
    module: ModuleType | None = None,
    prepare: Callable[[Any], None] | None = None,
) -> Engine:
    """``module``: the DBAPI module (the stdlib's by default); ``prepare`` runs on each new
    DBAPI connection before the pragmas (loading an extension)."""
    extra: dict[str, Any] = {} if module is None else {"module": module}
    engine = sa.create_engine(
        make_url(url), connect_args={"check_same_thread": False, "timeout": 30.0}, **extra
    )

    def on_connect(connection: Any, _record: Any) -> None:
        if prepare is not None:
            prepare(connection)
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    sa.event.listen(engine, "connect", on_connect)
    return engine
