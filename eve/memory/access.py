"""A node's memory slots bound to their stores: what its tools and its recall call, and the
inspection ``eve memory`` and the HTTP routes use.

``MemoryHost`` says where stores live (the session database's URL, the app root for file
providers) and opens each once. Every operation works in the scope a turn is in: the
session's, its principal's or the agent's (``records.owner_of``), so one scope's entries
never reach another's turn. Text and metadata are redacted (``eve._redact``) before they
are stored, so a key a user pasted never lands in the memory table.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, assert_never

from sqlalchemy.engine import Engine

from eve._redact import redact
from eve._step_attempts import (
    StepAttempt,
    listen_for_fresh_steps,
    stop_listening_for_fresh_steps,
)
from eve.auth.principal import Principal, ref_of
from eve.errors import MemoryNotFound, MemorySlotUnknown, MemoryUnavailable
from eve.manifest import (
    DatabaseMemoryProvider,
    FileMemoryProvider,
    MemoryEntry,
    MemoryProviderEntry,
)
from eve.memory.file_store import FileMemory
from eve.memory.records import (
    MemoryFilter,
    MemoryHit,
    MemoryKey,
    MemoryRecord,
    NewEntry,
    SlotKey,
    Writer,
    entry_id,
    owner_of,
)
from eve.memory.sql import DatabaseMemory, memory_engine
from eve.memory.store import MemoryStore

#: characters of one entry's text; a longer save is refused with this number
MAX_TEXT_CHARS = 4000


@dataclass(kw_only=True, eq=False)  # by identity: a fresh-step listener, held weakly
class MemoryHost:
    """Where a process's memory stores live, each opened once on first use."""

    app_root: Path
    #: the session database (SQLAlchemy URL); None: no database here (``database()``
    #: slots raise ``MemoryUnavailable``)
    database_url: str | None
    #: the session store's engine on that database, lent by a session service: memory's
    #: table lives beside the sessions', on the same pool (None: memory opens its own)
    engine: Callable[[], Engine] | None = None
    #: turns are durable steps: a save is tagged with its step part, and a fresh attempt
    #: of a part first deletes what an unrecorded earlier attempt saved (``fresh_step``);
    #: its id comes from its call (in process, each write is a new entry)
    durable: bool = False
    _stores: dict[str, MemoryStore] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: the slots of each node bound here: the scopes a step part may have written
    _nodes: dict[str, list[MemoryEntry]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.durable:
            listen_for_fresh_steps(self)

    def bind(self, node_id: str, entries: list[MemoryEntry]) -> None:
        with self._lock:
            self._nodes[node_id] = entries

    async def fresh_step(self, attempt: StepAttempt) -> None:
        """Delete the entries an earlier attempt of ``attempt.step`` saved: it died before
        its record was written, so this attempt (asked of the model again, maybe with new
        call ids or another decision) would otherwise save them a second time."""
        with self._lock:
            nodes = list(self._nodes.items())
        turn = Turn(session_id=attempt.session_id, principal=attempt.principal)
        work: dict[tuple[int, MemoryKey], tuple[MemoryStore, MemoryKey]] = {}
        for node_id, entries in nodes:
            for entry in entries:
                store, key = self.store(entry.provider), key_of(entry, node_id, turn, self.app_root)
                work[(id(store), key)] = (store, key)
        if work:
            await asyncio.to_thread(lambda: [s.discard(k, attempt.step) for s, k in work.values()])

    def store(self, provider: MemoryProviderEntry) -> MemoryStore:
        with self._lock:
            match provider:
                case DatabaseMemoryProvider():
                    where = "database"
                case FileMemoryProvider():
                    where = f"files:{provider.directory}"
                case _:
                    assert_never(provider)
            if where not in self._stores:
                self._stores[where] = self._open(provider)
            return self._stores[where]

    def _open(self, provider: MemoryProviderEntry) -> MemoryStore:
        match provider:
            case DatabaseMemoryProvider():
                if self.database_url is None:
                    raise MemoryUnavailable(
                        "this memory slot keeps its entries in the session database, and "
                        "none is open here; run the agent with eve run, eve dev or eve serve, "
                        "or declare the slot with provider=files()"
                    )
                if self.engine is not None:
                    return DatabaseMemory(self.engine(), owns_engine=False)
                return DatabaseMemory(memory_engine(self.database_url))
            case FileMemoryProvider():
                return FileMemory((self.app_root / provider.directory).resolve())
            case _:
                assert_never(provider)

    def close(self) -> None:
        stop_listening_for_fresh_steps(self)
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()


def namespace_of(entry: MemoryEntry, app_root: Path) -> str:
    return entry.namespace or app_root.resolve().name or "agent"


@dataclass(frozen=True, kw_only=True)
class Turn:
    """Who and where a memory call is: the turn's session, principal, turn and call ids."""

    session_id: str
    principal: Principal
    turn_id: str = "turn_0"
    call_id: str = ""
    #: the durable step part the call runs in (``StepAttempt.step``; "": none)
    step: str = ""


def key_of(entry: MemoryEntry, node_id: str, turn: Turn, app_root: Path) -> MemoryKey:
    """The scope of ``entry``'s slot that a call of ``turn`` on ``node_id`` works in."""
    slot = SlotKey(
        namespace=namespace_of(entry, app_root),
        node_id=node_id,
        slot=entry.name,
        scope=entry.scope,
    )
    owner = owner_of(entry.scope, session_id=turn.session_id, principal=turn.principal)
    return MemoryKey(slot=slot, owner=owner)


class NodeMemory:
    """One node's slots, bound to their stores."""

    def __init__(self, host: MemoryHost, node_id: str, entries: list[MemoryEntry]) -> None:
        self.host = host
        self.node_id = node_id
        self.slots = {entry.name: entry for entry in entries}
        host.bind(node_id, entries)

    def entry(self, name: str | None) -> MemoryEntry:
        if name is None and len(self.slots) == 1:
            return next(iter(self.slots.values()))
        found = self.slots.get(name or "")
        if found is None:
            known = ", ".join(sorted(self.slots)) or "none"
            raise MemorySlotUnknown(
                f"no memory slot {name!r} here (slots: {known}); name one of them", slot=name or ""
            )
        return found

    def key(self, entry: MemoryEntry, turn: Turn) -> MemoryKey:
        return key_of(entry, self.node_id, turn, self.host.app_root)

    async def save(
        self, name: str | None, text: str, metadata: dict[str, Any], turn: Turn
    ) -> MemoryRecord:
        entry = self.entry(name)
        key = self.key(entry, turn)
        clean_text, clean_meta = _redacted(text, metadata)
        if self.host.durable:
            where = [key.slot.namespace, key.slot.node_id, key.slot.slot, key.owner]
            id = entry_id(*where, turn.session_id, turn.turn_id, turn.call_id)
        else:
            id = f"mem_{uuid.uuid4().hex[:24]}"
        writer = Writer(principal=ref_of(turn.principal), session_id=turn.session_id)
        store = self.host.store(entry.provider)
        new = NewEntry(
            id=id,
            text=clean_text,
            metadata=clean_meta,
            writer=writer,
            semantic=entry.search == "semantic",
            step=turn.step if self.host.durable else "",
        )
        return await asyncio.to_thread(store.save, key, new)

    async def search(self, name: str | None, query: str, limit: int, turn: Turn) -> list[MemoryHit]:
        entry = self.entry(name)
        key, store = self.key(entry, turn), self.host.store(entry.provider)
        semantic = entry.search == "semantic"
        return await asyncio.to_thread(
            lambda: store.search(key, query, limit=limit, semantic=semantic)
        )

    async def update(
        self,
        name: str | None,
        id: str,
        text: str | None,
        metadata: dict[str, Any] | None,
        turn: Turn,
    ) -> MemoryRecord:
        entry = self.entry(name)
        key, store = self.key(entry, turn), self.host.store(entry.provider)
        clean_text, clean_meta = _redacted(text or "", metadata or {})
        new_text = clean_text if text is not None else None
        new_meta = clean_meta if metadata is not None else None
        semantic = entry.search == "semantic"
        changed = await asyncio.to_thread(
            lambda: store.update(key, id, text=new_text, metadata=new_meta, semantic=semantic)
        )
        if changed is None:
            raise _not_found(entry.name, id)
        return changed

    async def forget(self, name: str | None, id: str, turn: Turn) -> None:
        entry = self.entry(name)
        key, store = self.key(entry, turn), self.host.store(entry.provider)
        if not await asyncio.to_thread(store.forget, key, id):
            raise _not_found(entry.name, id)

    async def recall(self, message: str, turn: Turn) -> str:
        """The prompt's memory section for a turn answering ``message``: each slot with
        ``recall=`` its entries most relevant to it (empty when none match)."""
        sections = []
        if not message.strip():
            return ""  # an attachment alone: nothing to search with
        for entry in self.slots.values():
            if entry.recall <= 0:
                continue
            hits = await self.search(entry.name, message, entry.recall, turn)
            if hits:
                lines = "\n".join(f"- [{h.record.id}] {h.record.text}" for h in hits)
                sections.append(
                    f'<memory slot="{entry.name}" scope="{entry.scope}">\n{lines}\n</memory>'
                )
        if not sections:
            return ""
        return (
            "What you remember that may bear on this message (search or update it with the "
            "memory tools):\n" + "\n".join(sections)
        )


def _redacted(text: str, metadata: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    meta: dict[str, Any] = json.loads(redact(json.dumps(metadata)))
    return redact(text), meta


def _not_found(slot: str, id: str) -> MemoryNotFound:
    return MemoryNotFound(
        f"no entry {id} in memory slot '{slot}' for this conversation's scope; search the "
        "slot for the entry's id",
        slot=slot,
        memory_id=id,
    )


class MemoryAdmin:
    """Every slot of an agent, for inspection and erasure by a person (``eve memory``,
    ``/eve/v1/memory``): an operator sees everything, anyone else only the entries they
    saved or that are about them (their ``principal`` scope)."""

    def __init__(self, host: MemoryHost, entries: list[MemoryEntry]) -> None:
        self.host = host
        self.entries = entries

    def _where(self, principal: Principal, slot: str | None) -> MemoryFilter:
        names = {entry.name for entry in self.entries}
        if slot is not None and slot not in names:
            known = ", ".join(sorted(names)) or "none"
            raise MemorySlotUnknown(f"no memory slot {slot!r} (slots: {known})", slot=slot)
        return MemoryFilter(
            namespaces=frozenset(namespace_of(e, self.host.app_root) for e in self.entries),
            slots=frozenset({slot}) if slot is not None else None,
            principal=None if principal.is_operator else ref_of(principal),
        )

    def _stores(self, slot: str | None) -> list[MemoryStore]:
        stores: list[MemoryStore] = []
        for entry in self.entries:
            if slot is None or entry.name == slot:
                store = self.host.store(entry.provider)
                if all(store is not s for s in stores):
                    stores.append(store)
        return stores

    def inspect(
        self, principal: Principal, *, slot: str | None, query: str | None, limit: int
    ) -> list[MemoryRecord]:
        where = self._where(principal, slot)
        found = [r for s in self._stores(slot) for r in s.inspect(where, query=query, limit=limit)]
        if query is None:
            found.sort(key=lambda r: (-r.updated_at, r.id))
        return found[:limit]

    def erase(self, principal: Principal, *, slot: str | None, ids: list[str] | None) -> int:
        where = self._where(principal, slot)
        return sum(s.erase(where, ids=ids) for s in self._stores(slot))
