"""Semantic memory on SQLite keeps its vectors in sqlite-vec's ``vec0`` (eve/memory/vectors.py),
reached through a sqlean engine on the session database's file: a KNN query never crosses a
scope, a forget takes the vector with it, and keyword slots never open that engine."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from eve.auth.principal import PrincipalRef
from eve.errors import MemorySearchUnavailable
from eve.memory import embedding, vectors
from eve.memory.records import MemoryFilter, MemoryKey, NewEntry, SlotKey, Writer
from eve.memory.sql import DatabaseMemory, memory_engine
from eve.memory.tables import create_memory_tables, memories

# looked up, not imported: every test worker imports this module as it collects, and only
# those that run its tests need the package
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("wordllama") is None,
    reason="semantic search needs the memory-semantic extra",
)
pytest.importorskip(
    "sqlite_vec", reason="semantic search on SQLite needs the memory-semantic extra"
)

SLOT = SlotKey(namespace="shop", node_id="__root__", slot="notes", scope="principal")
ALICE, BOB = PrincipalRef(id="alice", kind="user"), PrincipalRef(id="bob", kind="user")
ALICE_KEY, BOB_KEY = (
    MemoryKey(slot=SLOT, owner="user:alice"),
    MemoryKey(slot=SLOT, owner="user:bob"),
)


def _store(path: Path) -> DatabaseMemory:
    return DatabaseMemory(memory_engine(f"sqlite:///{path}"))


def _vector_ids(path: Path) -> dict[str, str]:
    """memory id -> scope key, read from the file's vec0 table by a fresh engine."""
    engine = vectors.vector_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as c:
            found = c.exec_driver_sql(f"SELECT memory_id, scope_key FROM {vectors.TABLE}")
            return {row.memory_id: row.scope_key for row in found}
    finally:
        engine.dispose()


def test_knn_results_never_cross_principals(tmp_path: Path) -> None:
    store = _store(tmp_path / "eve.sqlite")
    try:
        # Bob's coffee entry is the best match of the question in the whole table
        for key, who, id, text in (
            (ALICE_KEY, ALICE, "a1", "Alice plays the violin"),
            (ALICE_KEY, ALICE, "a2", "Alice's car needs new tyres"),
            (BOB_KEY, BOB, "b1", "Bob drinks espresso every morning"),
        ):
            writer = Writer(principal=who, session_id=f"ses_{who.id}")
            store.save(key, NewEntry(id=id, text=text, metadata={}, writer=writer, semantic=True))
        alice = store.search(ALICE_KEY, "which coffee does he like", limit=10, semantic=True)
        assert {h.record.id for h in alice} == {"a1", "a2"}
        [bob] = store.search(BOB_KEY, "which coffee does he like", limit=10, semantic=True)
        assert bob.record.id == "b1" and bob.score > max(h.score for h in alice)
        # k=1 filters inside the KNN query: Alice's nearest is hers, not the table's (Bob's)
        [first] = store.search(ALICE_KEY, "which coffee does he like", limit=1, semantic=True)
        assert first.record.id in {"a1", "a2"}
        question = embedding.to_bytes(embedding.embed(["which coffee does he like"])[0])
        knn = vectors.vector_engine(f"sqlite:///{tmp_path / 'eve.sqlite'}")
        with knn.connect() as c:
            assert {id for id, _ in vectors.nearest(c, ALICE_KEY, question, 10)} == {"a1", "a2"}
        knn.dispose()
        # the vectors are vec0 rows partitioned by scope; the table's blob column stays empty
        assert _vector_ids(tmp_path / "eve.sqlite") == {
            "a1": vectors.scope_key(ALICE_KEY),
            "a2": vectors.scope_key(ALICE_KEY),
            "b1": vectors.scope_key(BOB_KEY),
        }
        with store.engine.connect() as c:
            blobs = c.execute(
                sa.select(memories.c.embedding).where(memories.c.embedding.is_not(None))
            )
            assert blobs.all() == []
    finally:
        store.close()


def test_forget_and_erase_remove_the_vectors(tmp_path: Path) -> None:
    path = tmp_path / "eve.sqlite"
    writer = Writer(principal=ALICE, session_id="s1")
    store = _store(path)
    for id in ("a1", "a2", "a3"):
        text = f"Alice likes tea number {id}"
        store.save(ALICE_KEY, NewEntry(id=id, text=text, metadata={}, writer=writer, semantic=True))
    store.close()
    # a fresh process's store forgets before any semantic call: it finds the table itself
    store = _store(path)
    try:
        assert store.forget(ALICE_KEY, "a1")
        assert set(_vector_ids(path)) == {"a2", "a3"}
        assert [h.record.id for h in store.search(ALICE_KEY, "tea", limit=5, semantic=True)] != []
        assert store.erase(MemoryFilter(namespaces={"shop"}, principal=ALICE), ids=["a2"]) == 1
        assert set(_vector_ids(path)) == {"a3"}
        # an update's new text replaces the vector, so its old meaning no longer finds it
        store.update(ALICE_KEY, "a3", text="Alice rides a bicycle", metadata=None, semantic=True)
        [hit] = store.search(ALICE_KEY, "cycling", limit=1, semantic=True)
        assert hit.record.text == "Alice rides a bicycle" and set(_vector_ids(path)) == {"a3"}
    finally:
        store.close()


def test_keyword_slots_never_open_the_vector_engine(tmp_path: Path) -> None:
    path = tmp_path / "eve.sqlite"
    store = _store(path)
    try:
        writer = Writer(principal=ALICE, session_id="s1")
        store.save(ALICE_KEY, NewEntry(id="a1", text="Alice likes tea", metadata={}, writer=writer))
        assert [h.record.id for h in store.search(ALICE_KEY, "tea", limit=5)] == ["a1"]
        assert store.forget(ALICE_KEY, "a1")
        assert store._vector_engine is None
        with store.engine.connect() as c:
            assert not vectors.exists(c)
    finally:
        store.close()


def test_blob_vectors_of_an_older_file_move_into_vec0(tmp_path: Path) -> None:
    path = tmp_path / "eve.sqlite"
    engine = memory_engine(f"sqlite:///{path}")
    create_memory_tables(engine)
    with engine.begin() as c:
        c.execute(
            sa.insert(memories).values(
                id="old",
                namespace="shop",
                node_id="__root__",
                slot="notes",
                scope="principal",
                owner="user:alice",
                principal_kind="user",
                principal_id="alice",
                session_id="s0",
                text="Alice drinks espresso",
                metadata="{}",
                created_at=1.0,
                updated_at=1.0,
                embedding=embedding.to_bytes(embedding.embed(["Alice drinks espresso"])[0]),
            )
        )
    engine.dispose()
    store = _store(path)
    try:
        [hit] = store.search(ALICE_KEY, "coffee", limit=5, semantic=True)
        assert hit.record.id == "old"
        assert _vector_ids(path) == {"old": vectors.scope_key(ALICE_KEY)}
    finally:
        store.close()


def test_a_missing_sqlite_vec_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sqlite_vec", None)  # import fails as if not installed
    store = _store(tmp_path / "eve.sqlite")
    try:
        with pytest.raises(MemorySearchUnavailable, match=r"eve-durable\[memory-semantic\]"):
            store.search(ALICE_KEY, "tea", limit=5, semantic=True)
    finally:
        store.close()
