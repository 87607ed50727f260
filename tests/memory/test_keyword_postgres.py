"""Keyword memory search on PostgreSQL reads a stored ``tsvector`` (eve/memory/tables.py):
the search's plan reads the column's GIN index and never re-parses a text, its ranking is
the one ``to_tsvector(text)`` gave, and a table an earlier eve made (an index over the
expression, no column) upgrades in place, also when several workers open it at once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from bench.memory_search import EARLIER_KEYWORD_SCHEMA
from eve.auth.principal import PrincipalRef
from eve.errors import MemoryUnavailable
from eve.memory.records import NewEntry, Writer
from eve.memory.sql import DatabaseMemory, memory_engine
from eve.memory.tables import SEARCH_COLUMN, create_memory_tables, memories
from tests.memory.conftest import (
    ALICE,
    ALICE_KEY,
    BOB,
    BOB_KEY,
    at_once,
    entry_row,
    login_role,
)


def _psycopg(url: str) -> str:
    return "postgresql+psycopg://" + url.split("://", 1)[1]


@pytest.fixture
def engine(postgres_url: str) -> Iterator[Engine]:
    opened = memory_engine(_psycopg(postgres_url))
    yield opened
    opened.dispose()


def _indexes(engine: Engine) -> set[str]:
    return {i["name"] for i in sa.inspect(engine).get_indexes(memories.name) if i["name"]}


def _columns(engine: Engine) -> set[str]:
    return {c["name"] for c in sa.inspect(engine).get_columns(memories.name)}


def _captured(engine: Engine) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    sa.event.listen(engine, "before_cursor_execute", lambda *a: seen.append((a[2], a[3])))
    return seen


def test_a_search_reads_the_gin_index_of_the_stored_vectors(engine: Engine) -> None:
    create_memory_tables(engine)
    # a scope of many entries, few of which hold the word asked for: reading the scope's
    # rows and testing each would be the slow plan the stored column's index replaces
    rows = [entry_row(f"a{n:04d}", f"Alice asked about the lamp, number {n}") for n in range(2000)]
    rows += [
        entry_row("kettle1", "Alice's kettle whistles"),
        entry_row("kettle2", "a kettle for Alice"),
    ]
    with engine.begin() as c:
        c.execute(sa.insert(memories), rows)
        c.exec_driver_sql("ANALYZE eve_memories")
    store = DatabaseMemory(engine, owns_engine=False)
    statements = _captured(engine)
    hits = store.search(ALICE_KEY, "what about the kettle", limit=5)
    assert {h.record.id for h in hits} == {"kettle1", "kettle2"}
    [(query, parameters)] = [(s, p) for s, p in statements if "@@" in s]
    assert SEARCH_COLUMN in query and "to_tsvector" not in query
    with engine.connect() as c:
        # a table this small is cheaper read whole; without that choice the planner picks
        # between the scope's B-tree (2,002 rows to test) and the words' GIN index (2)
        c.exec_driver_sql("SET enable_seqscan = off")
        plan = "\n".join(c.exec_driver_sql("EXPLAIN " + query, parameters).scalars())
    assert "eve_memories_words" in plan, plan
    assert "to_tsvector" not in plan, plan


def test_ranking_is_what_to_tsvector_of_the_text_gave_and_stays_in_its_scope(
    engine: Engine,
) -> None:
    store = DatabaseMemory(engine, owns_engine=False)
    texts = {
        "m1": "Alice drinks her coffee black, no sugar",
        "m2": "coffee, coffee and more coffee: Alice runs on coffee",
        "m3": "The coffee grinder broke, the sugar jar and the sugar bowl are empty",
        "m4": "Alice's sister lives in Lyon",
    }
    for id, text in texts.items():
        store.save(ALICE_KEY, NewEntry(id=id, text=text, metadata={}, writer=_writer(ALICE)))
    # Bob's entries are the table's best matches: none of them is ever Alice's hit
    for n in range(3):
        text = f"coffee sugar coffee sugar {n}"
        store.save(BOB_KEY, NewEntry(id=f"b{n}", text=text, metadata={}, writer=_writer(BOB)))
    hits = store.search(ALICE_KEY, "coffee with sugar", limit=5)
    expected = sa.text(
        "SELECT id, ts_rank(to_tsvector('english', text), to_tsquery('english', "
        "'coffee | sugar')) AS score FROM eve_memories WHERE owner = 'user:alice' "
        "AND to_tsvector('english', text) @@ to_tsquery('english', 'coffee | sugar') "
        "ORDER BY score DESC, updated_at DESC"
    )
    with engine.connect() as c:
        recomputed = [(r.id, r.score) for r in c.execute(expected)]
    assert [(h.record.id, pytest.approx(h.score)) for h in hits] == recomputed
    assert {h.record.id for h in hits} == {"m1", "m2", "m3"}
    assert len({h.score for h in hits}) == 3  # an order the ranking decided, not ties
    # an update's new text is what the stored vector now holds
    store.update(ALICE_KEY, "m4", text="Alice takes sugar in her tea", metadata=None)
    assert "m4" in {h.record.id for h in store.search(ALICE_KEY, "sugar", limit=5)}
    assert "m4" not in {h.record.id for h in store.search(ALICE_KEY, "Lyon", limit=5)}


def _writer(who: PrincipalRef) -> Writer:
    return Writer(principal=who, session_id=f"ses_{who.id}")


def test_a_table_an_earlier_eve_made_upgrades_in_place_with_workersat_once(
    postgres_url: str,
) -> None:
    engines = [memory_engine(_psycopg(postgres_url)) for _ in range(4)]
    try:
        first = engines[0]
        create_memory_tables(first)
        with first.begin() as c:
            for statement in EARLIER_KEYWORD_SCHEMA:
                c.exec_driver_sql(statement)
            c.execute(sa.insert(memories), [entry_row("old1", "Alice's espresso is a double")])
            c.execute(sa.insert(memories), [entry_row("old2", "Bob's espresso", owner="user:bob")])
        assert SEARCH_COLUMN not in _columns(first)

        # each worker's first call upgrades; none fails for another doing it at the same time
        def search(engine: Engine) -> None:
            store = DatabaseMemory(engine, owns_engine=False)
            hits = store.search(ALICE_KEY, "espresso", limit=5)
            assert [h.record.id for h in hits] == ["old1"]

        assert at_once(engines, search) == []
        assert SEARCH_COLUMN in _columns(first)
        indexes = _indexes(first)
        assert "eve_memories_words" in indexes and "eve_memories_text" not in indexes
        # a later store's first call sees the column and alters nothing
        statements = _captured(first)
        create_memory_tables(first)
        assert not [s for s, _ in statements if "ALTER TABLE" in s or "DROP INDEX" in s]
    finally:
        for engine in engines:
            engine.dispose()


def test_workers_creating_a_fresh_table_at_once_all_succeed(postgres_url: str) -> None:
    engines = [memory_engine(_psycopg(postgres_url)) for _ in range(4)]
    try:
        assert at_once(engines, create_memory_tables) == []
        assert "eve_memories_words" in _indexes(engines[0])
    finally:
        for engine in engines:
            engine.dispose()


def test_a_role_granted_only_the_rows_opens_an_upgraded_table_but_cannot_upgrade_one(
    postgres_url: str,
) -> None:
    admin = memory_engine(_psycopg(postgres_url))
    create_memory_tables(admin)
    with admin.begin() as c:
        for statement in EARLIER_KEYWORD_SCHEMA:
            c.exec_driver_sql(statement)
    rows = "GRANT SELECT, INSERT, UPDATE, DELETE ON eve_memories TO {role}"
    as_role = memory_engine(login_role(admin, postgres_url, rows))
    store = DatabaseMemory(as_role)
    try:
        with pytest.raises(MemoryUnavailable, match="only its owner may add them"):
            store.search(ALICE_KEY, "espresso", limit=5)
        create_memory_tables(admin)  # the owner's eve upgrades it
        entry = NewEntry(id="a1", text="Alice's espresso", metadata={}, writer=_writer(ALICE))
        store.save(ALICE_KEY, entry)
        assert [h.record.id for h in store.search(ALICE_KEY, "espresso", limit=5)] == ["a1"]
    finally:
        store.close()
        admin.dispose()
