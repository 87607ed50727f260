"""What a memory store holds and answers: entries, search hits, and the key of a scope."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal, cast

import msgspec

from eve.auth.principal import Principal, PrincipalKind, PrincipalRef

Scope = Literal["session", "principal", "agent"]


class MemoryRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of a memory slot, as stored (its text redacted before it was)."""

    id: str
    #: the slot (``memory``, or the name of ``memory/<name>.py``)
    slot: str
    scope: Scope
    text: str
    metadata: dict[str, Any] = {}
    #: seconds since the epoch
    created_at: float
    updated_at: float
    #: who saved it, and in which session: what ``eve memory`` and the HTTP routes filter on
    principal: PrincipalRef
    session_id: str


class MemoryHit(msgspec.Struct, frozen=True, kw_only=True):
    """A search result: the entry and how well it matched (higher is better)."""

    record: MemoryRecord
    score: float


@dataclass(frozen=True, kw_only=True)
class SlotKey:
    """Which slot of which agent: entries of one never reach another."""

    #: who the agent is (``define_memory(namespace=...)`` or the app root's name)
    namespace: str
    node_id: str
    slot: str
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class MemoryKey:
    """One scope of one slot: the entries a turn may read and change."""

    slot: SlotKey
    #: the session id (``session`` scope), the principal (``principal``), or empty (``agent``)
    owner: str


def owner_of(scope: Scope, *, session_id: str, principal: Principal) -> str:
    """The owner of ``scope`` for a turn of ``session_id`` sent by ``principal``."""
    if scope == "session":
        return f"session:{session_id}"
    if scope == "principal":
        return f"{principal.kind}:{principal.id}"
    return ""


@dataclass(frozen=True, kw_only=True)
class Writer:
    """Who writes an entry and where: stored beside it for inspection and erasure."""

    principal: PrincipalRef
    session_id: str


@dataclass(frozen=True, kw_only=True)
class NewEntry:
    """An entry as a save stores it, under ``id``: a second save with the same id replaces
    the first (a step run again after a crash), so it is never stored twice."""

    id: str
    text: str
    metadata: dict[str, Any]
    writer: Writer
    #: the slot searches by meaning, so the entry's embedding is stored too
    semantic: bool = False
    #: the durable step part saving it ("": none), which ``MemoryStore.discard`` finds it by
    step: str = ""


@dataclass(frozen=True, kw_only=True)
class MemoryFilter:
    """Which entries ``eve memory`` and the HTTP routes look at: the agent's slots, and (for
    anyone but an operator) only those its principal saved or that are about it."""

    namespaces: frozenset[str]
    slots: frozenset[str] | None = None
    #: None: everyone's (an operator's view)
    principal: PrincipalRef | None = None

    def about(self, record_principal: PrincipalRef, owner: str) -> bool:
        """Whether an entry saved by ``record_principal`` with ``owner`` passes the filter."""
        if self.principal is None:
            return True
        me = self.principal
        return record_principal == me or owner == f"{me.kind}:{me.id}"


def entry_id(*parts: str) -> str:
    """A stable id from what identifies a write (its call, its scope): a step that runs
    again after a crash writes the same row instead of a second one."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
    return f"mem_{digest[:24]}"


def principal_ref(kind: str, id: str) -> PrincipalRef:
    """Who saved an entry, as its row names them (a kind eve wrote itself)."""
    return PrincipalRef(id=id, kind=cast(PrincipalKind, kind))


def scope_of(row: Any) -> MemoryKey:
    """The scope of an ``eve_memories`` row (its namespace, node, slot, scope and owner)."""
    slot = SlotKey(namespace=row.namespace, node_id=row.node_id, slot=row.slot, scope=row.scope)
    return MemoryKey(slot=slot, owner=row.owner)
