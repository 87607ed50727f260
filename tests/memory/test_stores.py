"""Every memory store on real storage: SQLite (FTS5), PostgreSQL (full text) and files.

Saves, keyword search, updates and forgets stay inside their scope; a save repeated under
the same id (a step run again after a crash) is one entry; inspection and erasure by a
principal see only what is about them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eve.auth.principal import PrincipalRef
from eve.memory.file_store import FileMemory
from eve.memory.records import MemoryFilter, MemoryKey, NewEntry, SlotKey, Writer
from eve.memory.sql import DatabaseMemory, memory_engine
from eve.memory.store import MemoryStore

ALICE = PrincipalRef(id="alice", kind="user")
BOB = PrincipalRef(id="bob", kind="user")
NOTES = SlotKey(namespace="shop", node_id="__root__", slot="notes", scope="principal")


def key(owner: PrincipalRef, slot: SlotKey = NOTES) -> MemoryKey:
    return MemoryKey(slot=slot, owner=f"{owner.kind}:{owner.id}")


def writer(who: PrincipalRef) -> Writer:
    return Writer(principal=who, session_id=f"ses_{who.id}")


@pytest.fixture(params=["sqlite", "postgres", "files"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    opened: MemoryStore
    if request.param == "files":
        opened = FileMemory(tmp_path / "memory")
    elif request.param == "sqlite":
        opened = DatabaseMemory(memory_engine(f"sqlite:///{tmp_path / 'eve.sqlite'}"))
    else:
        url: str = request.getfixturevalue("postgres_url")
        opened = DatabaseMemory(memory_engine("postgresql+psycopg://" + url.split("://", 1)[1]))
    yield opened
    opened.close()


def save(store: MemoryStore, who: PrincipalRef, id: str, text: str, **meta: str) -> None:
    store.save(key(who), NewEntry(id=id, text=text, metadata=dict(meta), writer=writer(who)))


def test_keyword_search_ranks_matches_and_stays_in_its_scope(store: MemoryStore) -> None:
    save(store, ALICE, "m1", "Alice drinks her coffee black, no sugar", topic="diet")
    save(store, ALICE, "m2", "Alice's sister lives in Lyon")
    save(store, ALICE, "m3", "The coffee grinder broke; coffee tastes burnt since")
    save(store, BOB, "m4", "Bob likes coffee with oat milk")
    hits = store.search(key(ALICE), "How does she take her coffee?", limit=5)
    assert {h.record.id for h in hits} == {"m1", "m3"}
    assert all(h.record.principal == ALICE for h in hits)
    assert store.search(key(ALICE), "the of and", limit=5) == []
    [bob] = store.search(key(BOB), "coffee", limit=5)
    assert bob.record.id == "m4" and bob.record.metadata == {}
    [first] = store.search(key(ALICE), "sugar", limit=5)
    assert first.record.metadata == {"topic": "diet"}


def test_a_save_under_the_same_id_is_one_entry_with_its_first_creation_time(
    store: MemoryStore,
) -> None:
    save(store, ALICE, "m1", "first text")
    [before] = store.recent(key(ALICE), limit=10)
    save(store, ALICE, "m1", "second text")
    [after] = store.recent(key(ALICE), limit=10)
    assert after.text == "second text" and after.created_at == before.created_at
    assert [h.record.text for h in store.search(key(ALICE), "text", limit=5)] == ["second text"]


def test_update_and_forget_find_only_their_own_scopes_entries(store: MemoryStore) -> None:
    save(store, ALICE, "m1", "Alice is allergic to peanuts")
    assert store.update(key(BOB), "m1", text="hijacked", metadata=None) is None
    assert not store.forget(key(BOB), "m1")
    changed = store.update(key(ALICE), "m1", text="Alice is allergic to cashews", metadata=None)
    assert changed is not None and changed.text == "Alice is allergic to cashews"
    assert [h.record.id for h in store.search(key(ALICE), "cashews", limit=5)] == ["m1"]
    assert store.search(key(ALICE), "peanuts", limit=5) == []
    assert store.forget(key(ALICE), "m1")
    assert store.recent(key(ALICE), limit=5) == []


def test_another_agent_sharing_the_store_sees_none_of_its_entries(store: MemoryStore) -> None:
    other = SlotKey(namespace="bank", node_id="__root__", slot="notes", scope="principal")
    save(store, ALICE, "m1", "Alice's favourite colour is green")
    assert store.search(key(ALICE, other), "colour green", limit=5) == []
    assert store.recent(key(ALICE, other), limit=5) == []


def test_inspection_and_erasure_by_a_principal_see_only_what_is_about_them(
    store: MemoryStore,
) -> None:
    save(store, ALICE, "m1", "Alice prefers email")
    save(store, BOB, "m2", "Bob prefers phone calls")
    shop = frozenset({"shop"})
    everyone = MemoryFilter(namespaces=shop)
    alice = MemoryFilter(namespaces=shop, principal=ALICE)
    assert {r.id for r in store.inspect(everyone, query=None, limit=10)} == {"m1", "m2"}
    assert [r.id for r in store.inspect(alice, query=None, limit=10)] == ["m1"]
    assert store.inspect(alice, query="phone", limit=10) == []
    assert store.erase(alice, ids=["m2"]) == 0
    assert store.erase(alice, ids=None) == 1
    assert [r.id for r in store.inspect(everyone, query=None, limit=10)] == ["m2"]
