"""Semantic memory search with the local model (WordLlama, its weights in the wheel): a
question that shares no word with the entry it needs still finds it first.

On SQLite the vectors are rows of sqlite-vec's ``vec0`` (tests/memory/test_vectors.py); on
PostgreSQL with pgvector (pgserver's) rows of ``eve_memories_vec`` searched by ``<=>``
(tests/memory/test_pgvector.py), and on Debian's, which has no pgvector, blobs beside the
text ranked in process (see docs/memory.md).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from eve.auth.principal import PrincipalRef
from eve.memory.file_store import FileMemory
from eve.memory.records import MemoryKey, NewEntry, SlotKey, Writer
from eve.memory.sql import DatabaseMemory, memory_engine
from eve.memory.store import MemoryStore

# looked up, not imported: every test worker imports this module as it collects, and only
# those that run its tests need the package
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("wordllama") is None,
    reason="semantic search needs the memory-semantic extra",
)

ALICE = PrincipalRef(id="alice", kind="user")
KEY = MemoryKey(
    slot=SlotKey(namespace="shop", node_id="__root__", slot="notes", scope="principal"),
    owner="user:alice",
)
ENTRIES = {
    "m1": "Alice drinks espresso every morning",
    "m2": "Alice's car is a red hatchback that needs new tyres",
    "m3": "Alice plays the violin in an orchestra",
}


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "pgvector", "files"])
def test_a_question_without_the_entrys_words_finds_it_by_meaning(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store: MemoryStore
    if kind == "files":
        store = FileMemory(tmp_path / "memory")
    elif kind == "sqlite":
        store = DatabaseMemory(memory_engine(f"sqlite:///{tmp_path / 'eve.sqlite'}"))
    else:
        url: str = request.getfixturevalue(f"{kind}_url")
        store = DatabaseMemory(memory_engine("postgresql+psycopg://" + url.split("://", 1)[1]))
    writer = Writer(principal=ALICE, session_id="ses_1")
    for id, text in ENTRIES.items():
        store.save(KEY, NewEntry(id=id, text=text, metadata={}, writer=writer, semantic=True))
    try:
        assert store.search(KEY, "which coffee does she like", limit=3) == []  # no shared word
        ranked = store.search(KEY, "which coffee does she like", limit=3, semantic=True)
        assert ranked[0].record.id == "m1"
        music = store.search(KEY, "musical instrument", limit=1, semantic=True)
        assert [h.record.id for h in music] == ["m3"]
        store.update(
            KEY, "m2", text="Alice sold her car and rides a bike", metadata=None, semantic=True
        )
        [bike] = store.search(KEY, "bicycle", limit=1, semantic=True)
        assert bike.record.id == "m2"
    finally:
        store.close()
