"""Semantic memory's vectors on PostgreSQL: pgvector's ``vector`` type in a table beside
``eve_memories``, searched in the database with the cosine-distance operator ``<=>``.

``eve_memories_vec`` holds one row per semantic entry: the entry's id (a foreign key that
cascades, so a forget, an erase or a step's discard drops the vector in the same statement
as the entry), its scope key (``vectors.scope_key``, as SQLite's ``vec0`` partitions by)
and its 256 float32s. A save or an update writes the entry and its vector in one
transaction.

A search is an **exact** scan of the scope's rows (the scope-key index finds them) sorted by
``<=>``: never an approximate index. pgvector 0.6's HNSW and IVFFlat indexes apply a WHERE
clause after the index has produced its ``ef_search`` (40) or ``probes`` candidates, so a
scope that is a small share of the table would get fewer than k results, often none;
iterative index scans only arrive in 0.8. Restricting to the scope first also means no
principal can ever see another's entry, whatever k is. bench/memory_search.py measures it.

``prepare`` decides, once per store, whether the database can do this: the extension must
be installed in the database, or available on the server and creatable by eve's role
(pgvector is not a trusted extension: creating it takes a superuser). When it cannot, the
store keeps the blobs of ``eve_memories.embedding`` and ranks them in process, and says so
once per process in the log, with the fix. Blobs written by an earlier eve, or by a process
still ranking in process, move into the table: all of them the first time a store prepares
(the partial index ``eve_memories_blobs``, made then, marks it done), and a scope's stray
ones before each search of it (that index finds them without a scan).
"""

from __future__ import annotations

import enum
import logging
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from eve.memory.embedding import DIMENSIONS, matrix
from eve.memory.records import MemoryKey, scope_of
from eve.memory.tables import INSUFFICIENT_PRIVILEGE, idempotent
from eve.memory.vectors import scope_key

log = logging.getLogger("eve.memory")

TABLE = "eve_memories_vec"
#: blobs moved per transaction when a store prepares
BATCH = 500

_CREATE = [
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    "memory_id VARCHAR(64) PRIMARY KEY REFERENCES eve_memories (id) ON DELETE CASCADE, "
    "scope_key TEXT NOT NULL, "
    f"embedding vector({DIMENSIONS}) NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_scope ON {TABLE} (scope_key)",
]
# the blobs still to move: made once they have moved (it is then empty, where made before
# the move it would hold an entry per moved row until a vacuum, and every probe would walk
# them), so finding a scope's stray blobs is one probe of an empty index
_BLOB_INDEX = (
    "CREATE INDEX IF NOT EXISTS eve_memories_blobs ON eve_memories "
    "(namespace, node_id, slot, scope, owner) WHERE embedding IS NOT NULL"
)
_INSTALLED = sa.text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
_AVAILABLE = sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
_PUT = sa.text(
    f"INSERT INTO {TABLE} (memory_id, scope_key, embedding) "
    "VALUES (:id, :scope, CAST(:vector AS vector)) "
    "ON CONFLICT (memory_id) DO UPDATE SET "
    "scope_key = EXCLUDED.scope_key, embedding = EXCLUDED.embedding"
)
_NEAREST = sa.text(
    f"SELECT memory_id, embedding <=> CAST(:vector AS vector) AS distance FROM {TABLE} "
    "WHERE scope_key = :scope ORDER BY distance LIMIT :k"
)
# in id order after the last batch's: a walk of the primary key, not a scan per batch
_BLOBS = (
    "SELECT id, namespace, node_id, slot, scope, owner, embedding FROM eve_memories "
    "WHERE embedding IS NOT NULL AND id > :after{where} ORDER BY id LIMIT :batch "
    "FOR UPDATE SKIP LOCKED"
)
_IN_SCOPE = (
    " AND namespace = :namespace AND node_id = :node_id AND slot = :slot "
    "AND scope = :scope AND owner = :owner"
)
_DROP_BLOB = sa.text("UPDATE eve_memories SET embedding = NULL WHERE id = :id")


class Support(enum.Enum):
    """Where a store's semantic vectors live on PostgreSQL."""

    #: in ``eve_memories_vec``, searched in the database
    READY = "ready"
    #: the server has no pgvector: blobs ranked in process
    MISSING = "missing"
    #: the server has it, this role may not create it: blobs ranked in process
    FORBIDDEN = "forbidden"
    #: the database has it, this role may not create ``eve_memories_vec``: blobs ranked in
    #: process (never looked at again: only a grant or an administrator's table changes it)
    NO_TABLE = "no_table"

    @property
    def may_change(self) -> bool:
        """Whether an administrator creating the extension would make it ``READY``."""
        return self in (Support.MISSING, Support.FORBIDDEN)


_logged: set[Support] = set()


def literal(vector: Any) -> str:
    """A float32 vector as pgvector's text form: 9 significant digits round-trip a float32."""
    return "[" + ",".join(f"{x:.9g}" for x in vector.tolist()) + "]"


def prepare(engine: Engine) -> Support:
    """Create the extension and the table where this database and role allow, and move the
    blobs in; or say, once per process, why semantic search stays in process."""
    with engine.begin() as c:
        installed = c.execute(_INSTALLED).first() is not None
        available = installed or c.execute(_AVAILABLE).first() is not None
        role, database = c.execute(sa.text("SELECT current_user, current_database()")).one()
    if not available:
        _log_once(Support.MISSING, _missing_message())
        return Support.MISSING
    try:
        _create(engine, extension=not installed)
    except sa.exc.ProgrammingError as error:
        if getattr(error.orig, "sqlstate", None) != INSUFFICIENT_PRIVILEGE:
            raise
        if installed:
            _log_once(Support.NO_TABLE, _no_table_message(role, database))
            return Support.NO_TABLE
        _log_once(Support.FORBIDDEN, _forbidden_message(role, database))
        return Support.FORBIDDEN
    with engine.begin() as c:
        upgraded = c.execute(sa.text("SELECT to_regclass('eve_memories_blobs')")).scalar()
    if upgraded is None:
        # the first time only: a walk of every entry (185 ms at 100,000 when none is left)
        adopt_all(engine)
        idempotent(engine, [_BLOB_INDEX])
    return Support.READY


def _create(engine: Engine, *, extension: bool) -> None:
    statements = ["CREATE EXTENSION IF NOT EXISTS vector"] if extension else []
    idempotent(engine, [*statements, *_CREATE])


def installed(c: Connection) -> bool:
    """Whether the extension is in the database now (an administrator may have created it
    since ``prepare``)."""
    return c.execute(_INSTALLED).first() is not None


def put(c: Connection, key: MemoryKey, id: str, vector: Any) -> None:
    """Store (or replace) entry ``id``'s vector; the entry's row must exist."""
    c.execute(_PUT, {"id": id, "scope": scope_key(key), "vector": literal(vector)})


def nearest(c: Connection, key: MemoryKey, vector: Any, limit: int) -> list[tuple[str, float]]:
    """The scope's ``limit`` nearest entries: (id, cosine similarity), nearest first. Blobs
    of the scope that a process ranking in process wrote since move in first."""
    adopt(c, key)
    found = c.execute(_NEAREST, {"vector": literal(vector), "scope": scope_key(key), "k": limit})
    return [(row.memory_id, 1.0 - float(row.distance)) for row in found]


def adopt(c: Connection, key: MemoryKey) -> int:
    """Move the blob vectors of ``key``'s scope into the table; how many."""
    slot = key.slot
    scope = {
        "namespace": slot.namespace,
        "node_id": slot.node_id,
        "slot": slot.slot,
        "scope": slot.scope,
        "owner": key.owner,
    }
    moved, after = 0, ""
    while rows := _move(c, _IN_SCOPE, {**scope, "after": after}):
        moved, after = moved + len(rows), rows[-1]
    return moved


def adopt_all(engine: Engine) -> int:
    """Move every blob vector into the table, a batch per transaction; how many."""
    moved, after = 0, ""
    while True:
        with engine.begin() as c:
            rows = _move(c, "", {"after": after})
        if not rows:
            return moved
        moved, after = moved + len(rows), rows[-1]


def _move(c: Connection, where: str, parameters: dict[str, str]) -> list[str]:
    """One batch of blobs into the table; their ids, in order."""
    # FOR UPDATE SKIP LOCKED: two workers preparing at once move disjoint batches
    rows = c.execute(sa.text(_BLOBS.format(where=where)), {**parameters, "batch": BATCH}).all()
    if not rows:
        return []
    vectors = matrix([row.embedding for row in rows])
    c.execute(
        _PUT,
        [
            {
                "id": row.id,
                "scope": scope_key(scope_of(row)),
                "vector": literal(vector),
            }
            for row, vector in zip(rows, vectors, strict=True)
        ],
    )
    c.execute(_DROP_BLOB, [{"id": row.id} for row in rows])
    return [row.id for row in rows]


def _log_once(reason: Support, message: str) -> None:
    if reason not in _logged:
        _logged.add(reason)
        log.warning(message)


def _missing_message() -> str:
    return (
        "pgvector is not installed on this PostgreSQL server, so semantic memory search "
        "ranks each scope's vectors in this process instead of in the database. To search "
        "in the database, install the extension on the server (the postgresql-<version>-"
        "pgvector package of your distribution or of the PostgreSQL project, or a build of "
        "pgvector), then restart eve, which creates the extension and moves the vectors "
        "itself, or run CREATE EXTENSION vector; as a superuser"
    )


def _no_table_message(role: str, database: str) -> str:
    return (
        f"pgvector is installed in database {database!r}, but role {role!r} may not create "
        f"the {TABLE} table there, so semantic memory search ranks each scope's vectors in "
        "this process. Grant it CREATE on the schema of eve_memories (or start eve once as "
        "a role that may create tables there), then restart eve"
    )


def _forbidden_message(role: str, database: str) -> str:
    return (
        f"pgvector is installed on this PostgreSQL server, but role {role!r} may not create "
        f"the extension in database {database!r} (it takes a superuser), so semantic memory "
        "search ranks each scope's vectors in this process. Ask an administrator to run "
        f"CREATE EXTENSION vector; in {database!r}: eve then moves the vectors into the "
        "database at its next semantic search"
    )
