"""What every package that keeps tables in the session database shares: a SQLite engine in
WAL mode (readers never block the writer) and the upgrade of a table an earlier eve made.

The sessions store, DBOS's system database and memory (``eve.memory``, which may not import
``eve.sessions``) open their engines here, each with its own pragmas and pool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, make_url


def sqlite_engine(
    url: sa.URL | str,
    *,
    busy_timeout: float = 30.0,
    pragmas: Sequence[str] = (),
    module: ModuleType | None = None,
    prepare: Callable[[Any], None] | None = None,
    pool_size: int | None = None,
) -> Engine:
    """An engine on the SQLite file at ``url``: WAL and ``busy_timeout`` on every connection,
    then ``pragmas`` (``"synchronous=NORMAL"``). ``module`` is the DBAPI module (the stdlib's
    by default); ``prepare`` runs on each new DBAPI connection first (loading an extension,
    an isolation level); ``pool_size`` keeps that many connections open (``None``:
    SQLAlchemy's default pool)."""
    extra: dict[str, Any] = {} if module is None else {"module": module}
    if pool_size is not None:
        extra |= {"pool_size": pool_size, "max_overflow": 0}
    engine = sa.create_engine(
        make_url(url),
        connect_args={"check_same_thread": False, "timeout": busy_timeout},
        **extra,
    )

    def on_connect(connection: Any, _record: Any) -> None:
        if prepare is not None:
            prepare(connection)
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        for pragma in pragmas:
            cursor.execute(f"PRAGMA {pragma}")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        cursor.close()

    sa.event.listen(engine, "connect", on_connect)
    return engine


def add_missing_columns(
    bind: Engine | Connection, tables: sa.MetaData | Iterable[sa.Table]
) -> None:
    """Columns later versions added to ``tables`` (or a metadata's), on a database an
    earlier eve created (each nullable). On a ``Connection``, in its transaction: the
    caller holds the schema lock, so no other worker adds one meanwhile."""
    inspector = sa.inspect(bind)
    if isinstance(tables, sa.MetaData):
        tables = tables.sorted_tables
    for table in tables:
        present = {column["name"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name not in present:
                kind = column.type.compile(dialect=bind.dialect)
                alter = sa.text(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}")
                if isinstance(bind, Connection):
                    bind.execute(alter)
                    continue
                try:
                    with bind.begin() as c:
                        c.execute(alter)
                except sa.exc.SQLAlchemyError:
                    # another worker upgrading the same database added it first
                    columns = sa.inspect(bind).get_columns(table.name)
                    if column.name not in {found["name"] for found in columns}:
                        raise
