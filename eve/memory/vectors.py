"""Semantic memory's vectors on SQLite: a sqlite-vec ``vec0`` table beside ``eve_memories``.

This Python's stdlib ``sqlite3`` cannot load extensions, so the vectors are reached through a
second SQLAlchemy engine whose DBAPI module is ``sqlean`` (sqlean.py: the same ``sqlite3``
API over a SQLite that can load them) with ``sqlite-vec`` loaded on each connection. It opens
the same database file as the session store: both engines use WAL and a busy timeout, so
their transactions serialize like any two connections to one file. It is opened only when a
slot searches by meaning; keyword slots and the rest of eve keep the stdlib driver.

``eve_memories_vec`` holds one row per semantic entry: the entry's id, its scope (a
partition key, so a KNN query reads only that scope's chunks and never returns another
scope's entry) and its float32 vector compared by cosine distance. A write that touches a
vector runs entirely on this engine, so the entry and its vector commit together.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from eve._sql_engines import sqlite_engine
from eve.errors import MemorySearchUnavailable
from eve.memory.embedding import DIMENSIONS
from eve.memory.records import MemoryKey

TABLE = "eve_memories_vec"
#: vectors per chunk of one scope: vec0's default (1024) allots 1 MB to every scope, and most
#: scopes (a principal's, a session's) hold few entries. Measured once on a 100,000-entry
#: scope beside 200 three-entry ones (random vectors, a loaded 2-core machine): a k=5 query
#: took 143 / 103 / 134 ms and the file 121 / 161 / 319 MB at 64 / 256 / 1024
CHUNK_SIZE = 128
_INSTALL = "pip install 'eve-durable[memory-semantic]'"
#: joins the scope's columns into the partition key; no column holds a control character
_SEPARATOR = "\x1f"
_SCOPE_COLUMNS = ("namespace", "node_id", "slot", "scope", "owner")

_CREATE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING vec0("
    "memory_id TEXT PRIMARY KEY, "
    "scope_key TEXT PARTITION KEY, "
    f"embedding float[{DIMENSIONS}] distance_metric=cosine, "
    f"chunk_size={CHUNK_SIZE})"
)
# entries saved before the vectors moved here (blobs in eve_memories) join the table, and
# their blobs go, in one transaction: run at every open, it finds nothing once done
_BACKFILL = (
    f"INSERT INTO {TABLE}(memory_id, scope_key, embedding) "
    f"SELECT id, {' || char(31) || '.join(_SCOPE_COLUMNS)}, embedding "
    "FROM eve_memories WHERE embedding IS NOT NULL"
)
_DROP_BLOBS = "UPDATE eve_memories SET embedding = NULL WHERE embedding IS NOT NULL"
_NEAREST = sa.text(
    f"SELECT memory_id, distance FROM {TABLE} "
    "WHERE embedding MATCH :vector AND k = :k AND scope_key = :scope ORDER BY distance"
)


def scope_key(key: MemoryKey) -> str:
    slot = key.slot
    return _SEPARATOR.join((slot.namespace, slot.node_id, slot.slot, slot.scope, key.owner))


def vector_engine(url: sa.URL | str) -> Engine:
    """An engine on the SQLite file at ``url`` whose connections have ``vec0``."""
    try:
        import sqlean
        import sqlite_vec
    except ImportError as error:
        raise MemorySearchUnavailable(
            f"semantic memory search on SQLite needs sqlite-vec and sqlean.py ({_INSTALL}): {error}"
        ) from None

    def load_vec0(connection: Any) -> None:
        connection.enable_load_extension(True)
        sqlite_vec.load(connection)
        connection.enable_load_extension(False)

    return sqlite_engine(url, module=sqlean, prepare=load_vec0)


def exists(c: Connection) -> bool:
    """Whether the file has the vector table (readable without the extension)."""
    found = c.exec_driver_sql(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)
    )
    return found.first() is not None


def create(engine: Engine) -> None:
    """Create the table where missing (``IF NOT EXISTS``: two workers may race), then move
    any blob vectors into it (on ``vector_engine``)."""
    with engine.begin() as c:
        c.exec_driver_sql(_CREATE)
    with engine.begin() as c:
        c.exec_driver_sql(_BACKFILL)
        c.exec_driver_sql(_DROP_BLOBS)


def put(c: Connection, key: MemoryKey, id: str, vector: bytes) -> None:
    """Store (or replace) entry ``id``'s vector."""
    remove(c, [id])
    add(c, key, [(id, vector)])


def add(c: Connection, key: MemoryKey, entries: list[tuple[str, bytes]]) -> None:
    """Store new entries' vectors (id, ``embedding.to_bytes``) in one statement."""
    scope = scope_key(key)
    c.execute(
        sa.text(f"INSERT INTO {TABLE}(memory_id, scope_key, embedding) VALUES (:id, :scope, :v)"),
        [{"id": id, "scope": scope, "v": vector} for id, vector in entries],
    )


def remove(c: Connection, ids: list[str]) -> None:
    """Delete the vectors of ``ids`` (one primary-key delete each: vec0 looks up ``=``)."""
    if ids:
        c.execute(sa.text(f"DELETE FROM {TABLE} WHERE memory_id = :id"), [{"id": i} for i in ids])


def nearest(c: Connection, key: MemoryKey, vector: bytes, limit: int) -> list[tuple[str, float]]:
    """The scope's ``limit`` nearest entries: (id, cosine similarity), nearest first."""
    found = c.execute(_NEAREST, {"vector": vector, "k": limit, "scope": scope_key(key)})
    return [(row.memory_id, 1.0 - float(row.distance)) for row in found]
