"""eve's record of the version of its tables in the database that holds them: a start that
finds it current does no schema work.

Without it every start (every ``eve serve`` or ``eve dev`` worker, every ``eve sessions``
command) ran ``create_all`` (a look at each table), a look at each table's columns and at
each index, all to find a database already as this eve wants it. Now one read of
``eve_schema`` decides:

- **equal**: nothing to do;
- **older or missing** (a new database, or one an eve from before the record made): the
  upgrade (tables, then columns, then indexes) and the record, in one transaction under a
  lock, so workers starting at once upgrade one after the other;
- **newer**: ``DatabaseTooNew``. The tables may have columns this eve does not fill, so
  it refuses rather than write rows a newer eve would misread, and never records an older
  version over a newer one.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from eve.errors import DatabaseTooNew

_metadata = sa.MetaData()
#: the advisory lock eve's upgrade holds on PostgreSQL (a constant of eve's: "eve_schema")
_UPGRADE_LOCK = int.from_bytes(b"eve_schm", "big") >> 1

#: one row per set of tables eve versions (``tables``: ``eve.sessions.tables``)
schema_versions = sa.Table(
    "eve_schema",
    _metadata,
    sa.Column("part", sa.String(32), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
)


def recorded_version(engine: Engine, part: str) -> int:
    """The version recorded for ``part``; 0 when none is (a new database, or one an eve
    from before the record made: its table is missing)."""
    try:
        with engine.connect() as c:
            found = c.execute(_read(part)).scalar()
    except (sa.exc.OperationalError, sa.exc.ProgrammingError):
        # no such table (SQLite says OperationalError, PostgreSQL ProgrammingError)
        return 0
    return int(found or 0)


def record_version(c: Connection, part: str, version: int) -> None:
    """Record ``part`` at ``version`` in ``c``'s transaction, never lowering what is there
    (a newer eve's record stays)."""
    schema_versions.create(c, checkfirst=True)
    insert = postgresql.insert if c.dialect.name == "postgresql" else sqlite.insert
    row = insert(schema_versions).values(part=part, version=version)
    c.execute(
        row.on_conflict_do_update(
            index_elements=[schema_versions.c.part],
            set_={"version": row.excluded.version},
            where=schema_versions.c.version < row.excluded.version,
        )
    )


def ensure_version(
    engine: Engine, *, part: str, version: int, upgrade: Callable[[Connection], None]
) -> bool:
    """Bring ``part`` to ``version`` on ``engine``'s database: nothing when the record says
    it is there, ``upgrade`` then the record when it is older, ``DatabaseTooNew`` when it
    is newer. Returns whether it upgraded.

    The upgrade and its record are one transaction that holds the database's schema lock
    (``_lock``): workers starting at once on a new or an older database upgrade it one
    after the other, and each after the first finds the record current and does nothing."""
    if _checked(recorded_version(engine, part), part=part, version=version):
        return False
    with engine.begin() as c:
        _lock(c)
        found = c.execute(_read(part)).scalar() if _has_record(c) else None
        if _checked(int(found or 0), part=part, version=version):
            return False
        upgrade(c)
        record_version(c, part, version)
    return True


def _checked(found: int, *, part: str, version: int) -> bool:
    """Whether ``found`` is ``version``; ``DatabaseTooNew`` when it is after it."""
    if found > version:
        raise DatabaseTooNew(
            f"the session database's {part} are at version {found}, and this eve knows "
            f"up to {version}: a newer eve wrote it. Upgrade eve (or point it at another "
            "database); it will not write to tables it does not know",
            part=part,
            found=found,
            supported=version,
        )
    return found == version


def _read(part: str) -> sa.Select[int]:
    return sa.select(schema_versions.c.version).where(schema_versions.c.part == part)


def _has_record(c: Connection) -> bool:
    return sa.inspect(c).has_table(schema_versions.name)


def _lock(c: Connection) -> None:
    """Hold the database's schema lock until ``c``'s transaction ends: on SQLite its write
    lock (taken now, not at the first write, as DBOS's migrations take it), on PostgreSQL
    an advisory lock of eve's upgrade."""
    if c.dialect.name == "postgresql":
        c.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _UPGRADE_LOCK})
    else:
        c.exec_driver_sql("BEGIN IMMEDIATE")
