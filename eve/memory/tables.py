"""The memory table in the session database, and its full-text index on each engine.

``eve_memories`` sits beside eve's session tables with a metadata of its own (memory is
not a session's; ``eve sessions prune`` never touches it). Keyword search uses the
engine's own index: an FTS5 table kept in step by triggers on SQLite, a GIN index over
``to_tsvector('english', text)`` on PostgreSQL. Embeddings, when a slot searches by
meaning, are float32 blobs beside the text.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from eve._sql_engines import add_missing_columns

_metadata = sa.MetaData()

memories = sa.Table(
    "eve_memories",
    _metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("namespace", sa.String(64), nullable=False),
    sa.Column("node_id", sa.String(200), nullable=False),
    sa.Column("slot", sa.String(64), nullable=False),
    sa.Column("scope", sa.String(16), nullable=False),
    #: the scope's owner: ``session:<id>``, ``<kind>:<principal id>``, or empty (agent)
    sa.Column("owner", sa.String(300), nullable=False),
    #: who saved it, and in which session
    sa.Column("principal_kind", sa.String(16), nullable=False),
    sa.Column("principal_id", sa.String(255), nullable=False),
    sa.Column("session_id", sa.String(64), nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("metadata", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    #: float32 vector of the text (semantic slots only)
    sa.Column("embedding", sa.LargeBinary),
    #: the durable step part that saved it (``StepAttempt.step``; NULL in process): a
    #: fresh attempt of that part deletes what an unrecorded earlier attempt saved
    sa.Column("step", sa.String(300)),
    sa.Index("eve_memories_scope", "namespace", "node_id", "slot", "scope", "owner", "updated_at"),
    sa.Index("eve_memories_principal", "principal_kind", "principal_id"),
)

_SQLITE_FTS = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS eve_memories_fts USING fts5("
    "text, content='eve_memories', content_rowid='rowid', tokenize='porter unicode61')",
    "CREATE TRIGGER IF NOT EXISTS eve_memories_ai AFTER INSERT ON eve_memories BEGIN "
    "INSERT INTO eve_memories_fts(rowid, text) VALUES (new.rowid, new.text); END",
    "CREATE TRIGGER IF NOT EXISTS eve_memories_ad AFTER DELETE ON eve_memories BEGIN "
    "INSERT INTO eve_memories_fts(eve_memories_fts, rowid, text) "
    "VALUES ('delete', old.rowid, old.text); END",
    "CREATE TRIGGER IF NOT EXISTS eve_memories_au AFTER UPDATE OF text ON eve_memories BEGIN "
    "INSERT INTO eve_memories_fts(eve_memories_fts, rowid, text) "
    "VALUES ('delete', old.rowid, old.text); "
    "INSERT INTO eve_memories_fts(rowid, text) VALUES (new.rowid, new.text); END",
]
_POSTGRES_FTS = [
    "CREATE INDEX IF NOT EXISTS eve_memories_text ON eve_memories "
    "USING GIN (to_tsvector('english', text))",
]


#: a step's discard finds its entries by this index, not by scanning a large scope
_STEP_INDEX = "CREATE INDEX IF NOT EXISTS eve_memories_step ON eve_memories (step)"


def create_memory_tables(engine: Engine) -> None:
    """Create the table and its full-text index where missing (idempotent), and add the
    ``step`` column to a table made before it existed."""
    _metadata.create_all(engine, checkfirst=True)
    add_missing_columns(engine, _metadata)
    statements = _SQLITE_FTS if engine.dialect.name == "sqlite" else _POSTGRES_FTS
    with engine.begin() as connection:
        for statement in [*statements, _STEP_INDEX]:
            connection.exec_driver_sql(statement)
