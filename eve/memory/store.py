"""``MemoryStore``: the small protocol every memory provider implements.

Methods are synchronous (SQLAlchemy Core, file I/O); async callers run them in a thread.
Every method takes the scope it acts in, so a store cannot be asked for another scope's
entry: an id from elsewhere is simply not found.
"""

from __future__ import annotations

from typing import Any, Protocol

from eve.memory.records import MemoryFilter, MemoryHit, MemoryKey, MemoryRecord, NewEntry


class MemoryStore(Protocol):
    def save(self, key: MemoryKey, entry: NewEntry) -> MemoryRecord:
        """Store ``entry`` in ``key``'s scope, in place of one saved with its id before."""
        ...

    def discard(self, key: MemoryKey, step: str) -> int:
        """Delete the entries of ``key`` saved by ``step`` (an attempt of a step part that
        died before its record was written); the count."""
        ...

    def search(
        self, key: MemoryKey, query: str, *, limit: int, semantic: bool = False
    ) -> list[MemoryHit]:
        """The entries of ``key`` that best match ``query``, best first."""
        ...

    def update(
        self,
        key: MemoryKey,
        id: str,
        *,
        text: str | None,
        metadata: dict[str, Any] | None,
        semantic: bool = False,
    ) -> MemoryRecord | None:
        """Replace an entry's text or metadata; None when ``key`` has no entry ``id``."""
        ...

    def forget(self, key: MemoryKey, id: str) -> bool:
        """Delete an entry; False when ``key`` has no entry ``id``."""
        ...

    def recent(self, key: MemoryKey, *, limit: int) -> list[MemoryRecord]:
        """The entries of ``key``, most recently updated first."""
        ...

    def inspect(self, where: MemoryFilter, *, query: str | None, limit: int) -> list[MemoryRecord]:
        """Entries across scopes that ``where`` admits (``eve memory``, the HTTP routes):
        the best matches of ``query``, or the most recent when it is None."""
        ...

    def erase(self, where: MemoryFilter, *, ids: list[str] | None) -> int:
        """Delete what ``where`` admits (only ``ids`` among it, when given); the count."""
        ...

    def close(self) -> None: ...
