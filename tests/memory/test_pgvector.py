"""Semantic memory on PostgreSQL keeps its vectors in pgvector (eve/memory/pgvector.py), on
pgserver's PostgreSQL 16: a search is a ``<=>`` query that never crosses a scope, writes and
deletes carry the vector in the entry's transaction, and blobs an earlier eve saved move in.
Where the server has no pgvector (Debian's PostgreSQL 15) or eve's role may not create it,
the vectors stay blobs ranked in process, and the log says so once."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from eve.auth.principal import PrincipalRef
from eve.memory import embedding, pgvector
from eve.memory.records import MemoryFilter, MemoryKey, NewEntry, SlotKey, Writer
from eve.memory.sql import DatabaseMemory, memory_engine
from eve.memory.tables import create_memory_tables, memories
from eve.memory.vectors import scope_key
from tests.memory.conftest import at_once, entry_row, login_role

# looked up, not imported: every test worker imports this module as it collects, and only
# those that run its tests need the package
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("wordllama") is None,
    reason="semantic search needs the memory-semantic extra",
)

SLOT = SlotKey(namespace="shop", node_id="__root__", slot="notes", scope="principal")
ALICE, BOB = PrincipalRef(id="alice", kind="user"), PrincipalRef(id="bob", kind="user")
ALICE_KEY, BOB_KEY = (
    MemoryKey(slot=SLOT, owner="user:alice"),
    MemoryKey(slot=SLOT, owner="user:bob"),
)
COFFEE = "which coffee does he like"


def _psycopg(url: str) -> str:
    return "postgresql+psycopg://" + url.split("://", 1)[1]


@pytest.fixture
def store(pgvector_url: str) -> Iterator[DatabaseMemory]:
    opened = DatabaseMemory(memory_engine(_psycopg(pgvector_url)))
    yield opened
    opened.close()


@pytest.fixture
def logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> pytest.LogCaptureFixture:
    """eve.memory's warnings from now on (pgvector logs each reason once per process)."""
    monkeypatch.setattr(pgvector, "_logged", set())
    caplog.set_level(logging.WARNING, logger="eve.memory")
    return caplog


def _save(store: DatabaseMemory, key: MemoryKey, who: PrincipalRef, id: str, text: str) -> None:
    writer = Writer(principal=who, session_id=f"ses_{who.id}")
    store.save(key, NewEntry(id=id, text=text, metadata={}, writer=writer, semantic=True))


def _vectors(engine: Engine) -> dict[str, tuple[str, int]]:
    """memory id -> (scope key, dimensions), read from eve_memories_vec."""
    with engine.connect() as c:
        found = c.exec_driver_sql(
            f"SELECT memory_id, scope_key, vector_dims(embedding) AS n FROM {pgvector.TABLE}"
        )
        return {row.memory_id: (row.scope_key, row.n) for row in found}


def _blob_ids(engine: Engine) -> set[str]:
    with engine.connect() as c:
        found = c.execute(sa.select(memories.c.id).where(memories.c.embedding.is_not(None)))
        return set(found.scalars())


def _extension_installed(engine: Engine) -> bool:
    with engine.connect() as c:
        return pgvector.installed(c)


def _old_row(id: str, text: str, owner: str = "user:alice") -> dict[str, object]:
    """An entry as an eve before pgvector saved it: its vector a blob beside the text."""
    return {
        **entry_row(id, text, owner),
        "embedding": embedding.to_bytes(embedding.embed([text])[0]),
    }


def test_vectors_live_in_pgvector_and_a_search_is_a_distance_query(store: DatabaseMemory) -> None:
    _save(store, ALICE_KEY, ALICE, "a1", "Alice drinks espresso every morning")
    _save(store, ALICE_KEY, ALICE, "a2", "Alice's car needs new tyres")
    _save(store, ALICE_KEY, ALICE, "a3", "Alice plays the violin")
    alice = scope_key(ALICE_KEY)
    assert _vectors(store.engine) == {"a1": (alice, 256), "a2": (alice, 256), "a3": (alice, 256)}
    assert _blob_ids(store.engine) == set()

    statements: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    [first, *_] = store.search(ALICE_KEY, COFFEE, limit=3, semantic=True)
    assert first.record.id == "a1" and 0 < first.score <= 1
    [query] = [s for s in statements if "<=>" in s]
    assert pgvector.TABLE in query and "ORDER BY distance" in query
    # exact: the plan sorts the scope's rows by distance, with no approximate index
    vector = pgvector.literal(embedding.embed([COFFEE])[0])
    with store.engine.connect() as c:
        plan = "\n".join(
            c.execute(
                sa.text("EXPLAIN " + str(pgvector._NEAREST)),
                {"vector": vector, "scope": alice, "k": 3},
            ).scalars()
        )
    assert "<=>" in plan and "Sort" in plan
    assert "hnsw" not in plan.lower() and "ivfflat" not in plan.lower()

    # an update's new text replaces the vector: its old meaning no longer finds it first
    store.update(
        ALICE_KEY, "a2", text="Alice sold her car for a bike", metadata=None, semantic=True
    )
    [bike] = store.search(ALICE_KEY, "bicycle", limit=1, semantic=True)
    assert bike.record.id == "a2"
    # a forget and an erase take the vector with the entry (the foreign key cascades)
    assert store.forget(ALICE_KEY, "a3")
    assert set(_vectors(store.engine)) == {"a1", "a2"}
    assert store.erase(MemoryFilter(namespaces=frozenset({"shop"}), principal=ALICE), ids=["a1"])
    assert set(_vectors(store.engine)) == {"a2"}


def test_a_principal_never_sees_another_principals_entry(store: DatabaseMemory) -> None:
    _save(store, ALICE_KEY, ALICE, "a1", "Alice plays the violin")
    _save(store, ALICE_KEY, ALICE, "a2", "Alice's car needs new tyres")
    # Bob's entries are the whole table's best matches of the question
    for n in range(5):
        _save(store, BOB_KEY, BOB, f"b{n}", f"Bob drinks espresso every morning, cup {n}")
    alice = store.search(ALICE_KEY, COFFEE, limit=10, semantic=True)
    assert {h.record.id for h in alice} == {"a1", "a2"}
    [first] = store.search(ALICE_KEY, COFFEE, limit=1, semantic=True)
    assert first.record.id in {"a1", "a2"}
    bob = store.search(BOB_KEY, COFFEE, limit=10, semantic=True)
    assert {h.record.id for h in bob} == {f"b{n}" for n in range(5)}
    assert min(h.score for h in bob) > max(h.score for h in alice)


def test_keyword_slots_never_create_the_extension(store: DatabaseMemory) -> None:
    writer = Writer(principal=ALICE, session_id="s1")
    store.save(ALICE_KEY, NewEntry(id="a1", text="Alice likes tea", metadata={}, writer=writer))
    assert [h.record.id for h in store.search(ALICE_KEY, "tea", limit=5)] == ["a1"]
    assert store.forget(ALICE_KEY, "a1")
    assert not _extension_installed(store.engine)


def test_workers_preparing_at_once_all_use_pgvector(pgvector_url: str) -> None:
    # CREATE ... IF NOT EXISTS does not serialize catalog inserts: without a second try, all
    # but one of four workers starting together fail on pg_extension's unique index
    engines = [memory_engine(_psycopg(pgvector_url)) for _ in range(4)]
    create_memory_tables(engines[0])
    found: list[pgvector.Support] = []
    failed = at_once(engines, lambda engine: found.append(pgvector.prepare(engine)))
    for engine in engines:
        engine.dispose()
    assert failed == [] and found == [pgvector.Support.READY] * len(engines)


def test_blob_vectors_of_an_earlier_eve_move_into_pgvector(pgvector_url: str) -> None:
    engine = memory_engine(_psycopg(pgvector_url))
    create_memory_tables(engine)
    with engine.begin() as c:
        c.execute(sa.insert(memories), [_old_row("old1", "Alice drinks espresso")])
        c.execute(sa.insert(memories), [_old_row("old2", "Bob plays chess", owner="user:bob")])
    store = DatabaseMemory(engine)
    try:
        [hit] = store.search(ALICE_KEY, COFFEE, limit=5, semantic=True)
        assert hit.record.id == "old1"
        # every scope's blobs moved at the first semantic call, Bob's too
        assert _vectors(engine) == {
            "old1": (scope_key(ALICE_KEY), 256),
            "old2": (scope_key(BOB_KEY), 256),
        }
        assert _blob_ids(engine) == set()
        # a process still ranking in process saves a blob after that: a search adopts it
        with engine.begin() as c:
            c.execute(sa.insert(memories), [_old_row("late", "Alice collects coffee grinders")])
        found = store.search(ALICE_KEY, COFFEE, limit=5, semantic=True)
        assert {h.record.id for h in found} == {"old1", "late"}
        assert "late" in _vectors(engine) and _blob_ids(engine) == set()
    finally:
        store.close()


def test_without_pgvector_vectors_are_blobs_ranked_in_process(
    postgres_url: str, logged: pytest.LogCaptureFixture
) -> None:
    store = DatabaseMemory(memory_engine(_psycopg(postgres_url)))
    try:
        _save(store, ALICE_KEY, ALICE, "a1", "Alice drinks espresso every morning")
        _save(store, ALICE_KEY, ALICE, "a2", "Alice plays the violin")
        for _ in range(2):
            [hit] = store.search(ALICE_KEY, COFFEE, limit=1, semantic=True)
            assert hit.record.id == "a1"
        assert _blob_ids(store.engine) == {"a1", "a2"}
        [message] = logged.messages
        assert "pgvector is not installed on this PostgreSQL server" in message
        assert "postgresql-<version>-pgvector" in message
        with store.engine.connect() as c:
            assert not sa.inspect(c).has_table(pgvector.TABLE)
    finally:
        store.close()


def test_a_role_that_may_not_create_the_extension_ranks_in_process_until_it_exists(
    pgvector_url: str, logged: pytest.LogCaptureFixture
) -> None:
    admin = memory_engine(_psycopg(pgvector_url))
    # PostgreSQL 15+: only the database owner may create in schema public by default
    as_role = login_role(admin, pgvector_url, "GRANT CREATE ON SCHEMA public TO {role}")
    role = as_role.split("://", 1)[1].split("@", 1)[0]
    store = DatabaseMemory(memory_engine(as_role))
    try:
        _save(store, ALICE_KEY, ALICE, "a1", "Alice drinks espresso every morning")
        [hit] = store.search(ALICE_KEY, COFFEE, limit=1, semantic=True)
        assert hit.record.id == "a1" and _blob_ids(admin) == {"a1"}
        [message] = logged.messages
        assert f"role {role!r} may not create the extension" in message
        assert "CREATE EXTENSION vector" in message
        assert not _extension_installed(admin)
        # an administrator creates it: the role's next search moves the blobs in and uses it
        with admin.begin() as c:
            c.exec_driver_sql("CREATE EXTENSION vector")
        _save(store, ALICE_KEY, ALICE, "a2", "Alice plays the violin")  # still a blob
        [hit] = store.search(ALICE_KEY, COFFEE, limit=1, semantic=True)
        assert hit.record.id == "a1"
        assert set(_vectors(admin)) == {"a1", "a2"} and _blob_ids(admin) == set()
        _save(store, ALICE_KEY, ALICE, "a3", "Alice's car needs new tyres")
        assert set(_vectors(admin)) == {"a1", "a2", "a3"}
    finally:
        store.close()
        admin.dispose()


def test_a_role_that_may_not_create_the_vector_table_ranks_in_process(
    pgvector_url: str, logged: pytest.LogCaptureFixture
) -> None:
    admin = memory_engine(_psycopg(pgvector_url))
    create_memory_tables(admin)
    with admin.begin() as c:
        c.exec_driver_sql("CREATE EXTENSION vector")
    as_role = login_role(
        admin, pgvector_url, "GRANT SELECT, INSERT, UPDATE, DELETE ON eve_memories TO {role}"
    )
    store = DatabaseMemory(memory_engine(as_role))
    try:
        _save(store, ALICE_KEY, ALICE, "a1", "Alice drinks espresso every morning")
        for _ in range(2):  # the second search does not try again
            [hit] = store.search(ALICE_KEY, COFFEE, limit=1, semantic=True)
            assert hit.record.id == "a1"
        assert _blob_ids(admin) == {"a1"}
        [message] = logged.messages
        assert f"may not create the {pgvector.TABLE} table" in message
        assert store._support is pgvector.Support.NO_TABLE
    finally:
        store.close()
        admin.dispose()
