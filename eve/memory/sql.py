"""The default memory provider: entries in the session database (``tables.py``).

Keyword search ranks with the engine's full-text index (FTS5 ``bm25`` on SQLite, ``ts_rank``
of the stored ``text_search`` vector on PostgreSQL) over an OR of the query's words.
Semantic search on SQLite is a KNN query on sqlite-vec's ``vec0`` table (``vectors.py``); on
PostgreSQL an exact query by pgvector's ``<=>`` over the scope's rows (``pgvector.py``), or,
on a server without pgvector or where eve's role may not create it, blobs beside the text
ranked by cosine in process (``embedding.nearest``). bench/memory_search.py measures all
three.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, TypeVar, assert_never

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from eve._sql_engines import sqlite_engine
from eve.errors import MemoryUnavailable
from eve.memory import embedding, pgvector, vectors
from eve.memory.keywords import fts5_query, terms, tsquery
from eve.memory.records import (
    MemoryFilter,
    MemoryHit,
    MemoryKey,
    MemoryRecord,
    NewEntry,
    principal_ref,
    scope_of,
)
from eve.memory.tables import SEARCH_CONFIG, create_memory_tables, memories, search_words

T = TypeVar("T")
#: scopes whose vectors stay in memory between searches (each 1 KB per entry)
VECTOR_CACHE_SCOPES = 64
_COLUMNS = [c for c in memories.c if c.name not in ("embedding", "step")]
#: where a call's vector goes: nowhere (a keyword slot), sqlite-vec's ``vec0``, pgvector's
#: table, or a blob in ``eve_memories.embedding`` (PostgreSQL without pgvector)
Placement = Literal["none", "vec0", "pgvector", "blob"]


def memory_engine(url: str) -> Engine:
    """An engine on the session database at ``url`` (SQLAlchemy form)."""
    if not url.startswith("sqlite"):
        return sa.create_engine(url, pool_pre_ping=True)
    return sqlite_engine(url)


def _record(row: Any) -> MemoryRecord:
    return MemoryRecord(
        id=row.id,
        slot=row.slot,
        scope=row.scope,
        text=row.text,
        metadata=json.loads(row.metadata),
        created_at=row.created_at,
        updated_at=row.updated_at,
        principal=principal_ref(row.principal_kind, row.principal_id),
        session_id=row.session_id,
    )


def _in_scope(key: MemoryKey) -> sa.ColumnElement[bool]:
    slot = key.slot
    return sa.and_(
        memories.c.namespace == slot.namespace,
        memories.c.node_id == slot.node_id,
        memories.c.slot == slot.slot,
        memories.c.scope == slot.scope,
        memories.c.owner == key.owner,
    )


def _admitted(where: MemoryFilter) -> sa.ColumnElement[bool]:
    clauses: list[sa.ColumnElement[bool]] = [memories.c.namespace.in_(sorted(where.namespaces))]
    if where.slots is not None:
        clauses.append(memories.c.slot.in_(sorted(where.slots)))
    me = where.principal
    if me is not None:
        saved = sa.and_(memories.c.principal_kind == me.kind, memories.c.principal_id == me.id)
        clauses.append(sa.or_(saved, memories.c.owner == f"{me.kind}:{me.id}"))
    return sa.and_(*clauses)


@contextmanager
def _reachable() -> Iterator[None]:
    try:
        yield
    except sa.exc.OperationalError as error:
        # the driver's message quotes the statement and its parameters (entries' text)
        raise MemoryUnavailable(
            f"the memory table in the session database cannot be used "
            f"({type(error.orig).__name__}); check that the database is reachable and "
            "writable"
        ) from None


def _blob(placement: Placement, vector: Any) -> bytes | None:
    """``eve_memories.embedding``'s value: the vector only where it lives there."""
    return embedding.to_bytes(vector) if placement == "blob" else None


def _put_vector(c: Connection, placement: Placement, key: MemoryKey, id: str, vector: Any) -> None:
    """Store entry ``id``'s vector where ``placement`` keeps it, beside its row."""
    match placement:
        case "vec0":
            vectors.put(c, key, id, embedding.to_bytes(vector))
        case "pgvector":
            pgvector.put(c, key, id, vector)
        case "blob" | "none":
            pass
        case _:
            assert_never(placement)


class DatabaseMemory:
    """A ``MemoryStore`` over one database; ``semantic`` stores an embedding per entry."""

    def __init__(self, engine: Engine, *, owns_engine: bool = True) -> None:
        self.engine = engine
        #: False: the engine is lent (the session store's) and its owner disposes of it
        self.owns_engine = owns_engine
        self.postgres = engine.dialect.name == "postgresql"
        self._ready = False
        self._lock = threading.Lock()
        #: SQLite only: the sqlean engine that has ``vec0`` (``vectors.py``), opened by the
        #: first semantic call or the first delete in a file that has vectors
        self._vector_engine: Engine | None = None
        #: the vectors of the scopes searched last, by scope (``_vectors``)
        self._cache: OrderedDict[MemoryKey, tuple[tuple[Any, ...], list[str], Any]] = OrderedDict()
        #: PostgreSQL only: where vectors live, decided by the first semantic call
        self._support: pgvector.Support | None = None

    def _ensure_tables(self) -> None:
        with self._lock:
            if self._ready:
                return
            # safe beside other workers doing the same at the same moment
            create_memory_tables(self.engine)
            self._ready = True

    def _vectors_engine(self) -> Engine:
        """The vector engine, its table created on first use (SQLite only)."""
        self._ensure_tables()
        with self._lock:
            if self._vector_engine is None:
                engine = vectors.vector_engine(self.engine.url)
                try:
                    vectors.create(engine)
                except BaseException:
                    engine.dispose()
                    raise
                self._vector_engine = engine
            return self._vector_engine

    def _placement(self, semantic: bool) -> Placement:
        """Where this call's vector lives."""
        if not semantic:
            return "none"
        if not self.postgres:
            return "vec0"
        return "pgvector" if self._pgvector() is pgvector.Support.READY else "blob"

    def _pgvector(self, *, recheck: bool = False) -> pgvector.Support:
        """Whether pgvector holds this database's vectors (``pgvector.prepare``), decided at
        the first semantic call. While it does not, a search (``recheck``) looks whether an
        administrator has since created the extension: one catalog row, and it saves
        restarting every worker."""
        support = self._support
        if support is pgvector.Support.READY:
            return support
        if support is not None and not (
            recheck and support.may_change and self._run(pgvector.installed)
        ):
            return support
        self._ensure_tables()
        with self._lock, _reachable():
            if self._support is not pgvector.Support.READY:
                self._support = pgvector.prepare(self.engine)
            return self._support

    def _deletes_vectors(self) -> bool:
        """Whether a delete must remove vectors too: the file has a ``vec0`` table."""
        if self.postgres:
            return False
        if self._vector_engine is not None:
            return True
        return self._run(vectors.exists)

    def _run(self, work: Callable[[Connection], T], *, with_vectors: bool = False) -> T:
        with _reachable():
            engine = self._vectors_engine() if with_vectors else self.engine
            self._ensure_tables()
            with engine.begin() as connection:
                return work(connection)

    def save(self, key: MemoryKey, entry: NewEntry) -> MemoryRecord:
        id, writer, now = entry.id, entry.writer, time.time()
        vector = embedding.embed([entry.text])[0] if entry.semantic else None
        placement = self._placement(entry.semantic)
        values = {
            "namespace": key.slot.namespace,
            "node_id": key.slot.node_id,
            "slot": key.slot.slot,
            "scope": key.slot.scope,
            "owner": key.owner,
            "principal_kind": writer.principal.kind,
            "principal_id": writer.principal.id,
            "session_id": writer.session_id,
            "text": entry.text,
            "metadata": json.dumps(entry.metadata, sort_keys=True),
            "updated_at": now,
            "embedding": _blob(placement, vector),
            "step": entry.step or None,
        }

        def write(c: Connection) -> MemoryRecord:
            # delete-then-insert rather than an upsert per dialect: the row keeps its id and
            # creation time, and the FTS triggers see a plain delete and insert
            before = c.execute(
                sa.select(memories.c.created_at).where(memories.c.id == id)
            ).scalar_one_or_none()
            c.execute(sa.delete(memories).where(memories.c.id == id))
            created = before if before is not None else now
            c.execute(sa.insert(memories).values(id=id, created_at=created, **values))
            _put_vector(c, placement, key, id, vector)
            row = c.execute(sa.select(*_COLUMNS).where(memories.c.id == id)).one()
            return _record(row)

        return self._run(write, with_vectors=placement == "vec0")

    def search(
        self, key: MemoryKey, query: str, *, limit: int, semantic: bool = False
    ) -> list[MemoryHit]:
        if semantic:
            return self._nearest(key, query, limit)
        return self._run(lambda c: self._matching(c, _in_scope(key), terms(query), limit))

    def _matching(
        self, c: Connection, where: sa.ColumnElement[bool], words: Sequence[str], limit: int
    ) -> list[MemoryHit]:
        if not words:
            return []
        if self.postgres:
            # the stored vector (``tables.py``): read from the GIN index and the row, where
            # to_tsvector(text) here would parse the text of every match again to rank it
            document = search_words()
            wanted = sa.func.to_tsquery(SEARCH_CONFIG, tsquery(words))
            rank = sa.func.ts_rank(document, wanted).label("score")
            statement = (
                sa.select(*_COLUMNS, rank)
                .where(where, document.op("@@")(wanted))
                .order_by(rank.desc(), memories.c.updated_at.desc())
                .limit(limit)
            )
            return [
                MemoryHit(record=_record(r), score=float(r.score)) for r in c.execute(statement)
            ]
        fts = sa.table("eve_memories_fts", sa.column("rowid"))
        # bm25 is lower for better matches; the hit's score is its negation
        bm25: sa.ColumnElement[float] = sa.literal_column("bm25(eve_memories_fts)")
        statement = (
            sa.select(*_COLUMNS, (-bm25).label("score"))
            .select_from(memories.join(fts, fts.c.rowid == sa.literal_column("eve_memories.rowid")))
            .where(where, sa.literal_column("eve_memories_fts").op("MATCH")(fts5_query(words)))
            .order_by(bm25, memories.c.updated_at.desc())
            .limit(limit)
        )
        return [MemoryHit(record=_record(r), score=float(r.score)) for r in c.execute(statement)]

    def _nearest(self, key: MemoryKey, query: str, limit: int) -> list[MemoryHit]:
        vector = embedding.embed([query])[0]
        if self.postgres and self._pgvector(recheck=True) is pgvector.Support.READY:
            return self._run(lambda c: self._hits(c, key, pgvector.nearest(c, key, vector, limit)))
        if self.postgres:
            ids, stored = self._run(lambda c: self._vectors(c, key))
            ranked = [(ids[i], score) for i, score in embedding.nearest(vector, stored, limit)]
            return self._run(lambda c: self._hits(c, key, ranked))

        def knn(c: Connection) -> list[MemoryHit]:
            found = vectors.nearest(c, key, embedding.to_bytes(vector), limit)
            return self._hits(c, key, found)

        return self._run(knn, with_vectors=True)

    def _hits(
        self, c: Connection, key: MemoryKey, ranked: list[tuple[str, float]]
    ) -> list[MemoryHit]:
        """The entries of ``ranked`` (id, score), in its order; still in the scope, so an
        entry deleted since its vector was read is left out."""
        if not ranked:
            return []
        wanted = [id for id, _ in ranked]
        # by primary key alone, the scope checked here: with the scope in the WHERE clause,
        # a table without statistics yet (just filled, not yet analyzed) led PostgreSQL to
        # walk the scope's index and filter every entry by id (110 ms at 100,000 entries)
        found = c.execute(sa.select(*_COLUMNS).where(memories.c.id.in_(wanted)))
        records = {r.id: _record(r) for r in found if scope_of(r) == key}
        return [MemoryHit(record=records[id], score=s) for id, s in ranked if id in records]

    def _vectors(self, c: Connection, key: MemoryKey) -> tuple[list[str], Any]:
        """PostgreSQL: the scope's ids and vectors, read again only when the scope changed:
        its count or its newest update differ from the cached copy's (another worker's too).
        Reading 100,000 vectors costs far more than the ranking (bench/memory_search.py)."""
        # over the scope's index alone: a condition on the vectors would read every one
        changed = sa.select(sa.func.count(), sa.func.max(memories.c.updated_at))
        version = tuple(c.execute(changed.where(_in_scope(key))).one())
        where = sa.and_(_in_scope(key), memories.c.embedding.is_not(None))
        cached = self._cache.get(key)
        if cached is not None and cached[0] == version:
            self._cache.move_to_end(key)
            return cached[1], cached[2]
        stored = c.execute(sa.select(memories.c.id, memories.c.embedding).where(where)).all()
        ids = [r.id for r in stored]
        matrix = embedding.matrix([r.embedding for r in stored])
        self._cache[key] = (version, ids, matrix)
        while len(self._cache) > VECTOR_CACHE_SCOPES:
            self._cache.popitem(last=False)
        return ids, matrix

    def update(
        self,
        key: MemoryKey,
        id: str,
        *,
        text: str | None,
        metadata: dict[str, Any] | None,
        semantic: bool = False,
    ) -> MemoryRecord | None:
        values: dict[str, Any] = {"updated_at": time.time()}
        vector = None
        if text is not None:
            values["text"] = text
            if semantic:
                vector = embedding.embed([text])[0]
        placement = self._placement(vector is not None)
        if placement in ("blob", "pgvector"):
            # pgvector: a blob a process ranking in process left would replace the new vector
            values["embedding"] = _blob(placement, vector)
        if metadata is not None:
            values["metadata"] = json.dumps(metadata, sort_keys=True)
        target = sa.and_(_in_scope(key), memories.c.id == id)

        def write(c: Connection) -> MemoryRecord | None:
            if c.execute(sa.update(memories).where(target).values(**values)).rowcount == 0:
                return None
            _put_vector(c, placement, key, id, vector)
            return _record(c.execute(sa.select(*_COLUMNS).where(memories.c.id == id)).one())

        return self._run(write, with_vectors=placement == "vec0")

    def forget(self, key: MemoryKey, id: str) -> bool:
        return self._delete(sa.and_(_in_scope(key), memories.c.id == id)) > 0

    def discard(self, key: MemoryKey, step: str) -> int:
        return self._delete(sa.and_(_in_scope(key), memories.c.step == step))

    def recent(self, key: MemoryKey, *, limit: int) -> list[MemoryRecord]:
        statement = (
            sa.select(*_COLUMNS)
            .where(_in_scope(key))
            .order_by(memories.c.updated_at.desc(), memories.c.id)
            .limit(limit)
        )
        return self._run(lambda c: [_record(r) for r in c.execute(statement)])

    def inspect(self, where: MemoryFilter, *, query: str | None, limit: int) -> list[MemoryRecord]:
        if query is not None:
            words = terms(query)
            hits = self._run(lambda c: self._matching(c, _admitted(where), words, limit))
            return [hit.record for hit in hits]
        statement = (
            sa.select(*_COLUMNS)
            .where(_admitted(where))
            .order_by(memories.c.updated_at.desc(), memories.c.id)
            .limit(limit)
        )
        return self._run(lambda c: [_record(r) for r in c.execute(statement)])

    def erase(self, where: MemoryFilter, *, ids: list[str] | None) -> int:
        clause = _admitted(where)
        if ids is not None:
            clause = sa.and_(clause, memories.c.id.in_(ids))
        return self._delete(clause)

    def _delete(self, clause: sa.ColumnElement[bool]) -> int:
        """Delete the entries ``clause`` admits, their vectors with them; the count. Once a
        file has a ``vec0`` table every delete runs on the vector engine (the stdlib driver
        cannot touch the table); a vector whose entry is gone anyway (a delete by a process
        that checked just before the table appeared) is never a hit (``_hits``)."""
        with_vectors = self._deletes_vectors()

        def delete(c: Connection) -> int:
            if with_vectors:
                gone = c.execute(sa.select(memories.c.id).where(clause)).scalars().all()
                vectors.remove(c, list(gone))
            return c.execute(sa.delete(memories).where(clause)).rowcount

        return self._run(delete, with_vectors=with_vectors)

    def close(self) -> None:
        if self._vector_engine is not None:
            self._vector_engine.dispose()
        if self.owns_engine:
            self.engine.dispose()
