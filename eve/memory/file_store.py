"""The development memory provider: one JSON file per scope under a directory of the app.

Readable and easy to reset (delete the folder), and slow past a few thousand entries: each
call reads the scope's whole file. Writes replace the file atomically (write, then rename),
so a crash leaves the old or the new file, never half of one, and a reader sees one or the
other without a lock.

Several processes may share the directory (``eve serve --workers 2``, ``eve memory`` beside
a server): a change reads, edits and replaces a scope's file under an exclusive ``flock`` on
the scope's lock file beside it (``<name>.lock``), so two writers take turns and each edits
what the other left; nothing is cached between calls, so every call sees the other
processes' latest writes. Keyword search scores by the query's words
(``keywords.overlap_score``); semantic search embeds the scope's entries at each query.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from eve.errors import MemoryUnavailable
from eve.memory import embedding
from eve.memory.keywords import overlap_score, terms
from eve.memory.records import MemoryFilter, MemoryHit, MemoryKey, MemoryRecord, NewEntry


class _ScopeFile(msgspec.Struct, kw_only=True):
    namespace: str
    node_id: str
    owner: str
    entries: list[MemoryRecord] = []
    #: the durable step part that saved an entry, by id (``MemoryStore.discard``)
    steps: dict[str, str] = {}


_decoder = msgspec.json.Decoder(_ScopeFile)


class FileMemory:
    """A ``MemoryStore`` over the JSON files under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, key: MemoryKey) -> Path:
        slot = key.slot
        name = hashlib.sha256("\x1f".join([slot.node_id, key.owner]).encode()).hexdigest()[:16]
        return self.directory / slot.namespace / slot.slot / slot.scope / f"{name}.json"

    def _read(self, path: Path) -> _ScopeFile | None:
        try:
            return _decoder.decode(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as error:
            raise MemoryUnavailable(
                f"the memory file {path} cannot be read ({error}); fix or delete it"
            ) from None

    def _load(self, key: MemoryKey) -> _ScopeFile:
        found = self._read(self._path(key))
        return found or _ScopeFile(
            namespace=key.slot.namespace, node_id=key.slot.node_id, owner=key.owner
        )

    def _write(self, key: MemoryKey, scope: _ScopeFile) -> None:
        self._replace(self._path(key), scope)

    @contextlib.contextmanager
    def _changing(self, path: Path) -> Iterator[None]:
        """Hold the scope file ``path``'s lock: read it inside, then write it, and no other
        process's change comes between (``flock`` waits for the holder)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as error:
            raise MemoryUnavailable(
                f"the memory file {path} cannot be locked ({error.strerror or error})"
            ) from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def _replace(self, path: Path, scope: _ScopeFile) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".json.partial")
            partial.write_bytes(msgspec.json.format(msgspec.json.encode(scope)))
            os.replace(partial, path)
        except OSError as error:
            raise MemoryUnavailable(
                f"the memory file {path} cannot be written ({error.strerror or error})"
            ) from None

    def save(self, key: MemoryKey, entry: NewEntry) -> MemoryRecord:
        id = entry.id
        with self._changing(self._path(key)):
            scope = self._load(key)
            now = time.time()
            before = next((e for e in scope.entries if e.id == id), None)
            record = MemoryRecord(
                id=id,
                slot=key.slot.slot,
                scope=key.slot.scope,
                text=entry.text,
                metadata=entry.metadata,
                created_at=before.created_at if before else now,
                updated_at=now,
                principal=entry.writer.principal,
                session_id=entry.writer.session_id,
            )
            scope.entries = [e for e in scope.entries if e.id != id] + [record]
            scope.steps.pop(id, None)
            if entry.step:
                scope.steps[id] = entry.step
            self._write(key, scope)
            return record

    def discard(self, key: MemoryKey, step: str) -> int:
        path = self._path(key)
        if not path.exists():
            return 0  # the common case: nothing saved in this scope yet, nothing to lock
        with self._changing(path):
            scope = self._read(path)
            gone = {id for id, by in scope.steps.items() if by == step} if scope else set()
            if scope is None or not gone:
                return 0  # the common case: no earlier attempt
            scope.entries = [e for e in scope.entries if e.id not in gone]
            scope.steps = {id: s for id, s in scope.steps.items() if id not in gone}
            self._write(key, scope)
            return len(gone)

    def search(
        self, key: MemoryKey, query: str, *, limit: int, semantic: bool = False
    ) -> list[MemoryHit]:
        entries = self._load(key).entries
        if semantic:
            if not entries:
                return []
            vectors = embedding.embed([e.text for e in entries])
            ranked = embedding.nearest(embedding.embed([query])[0], vectors, limit)
            return [MemoryHit(record=entries[i], score=score) for i, score in ranked]
        return _ranked(entries, terms(query), limit)

    def update(
        self,
        key: MemoryKey,
        id: str,
        *,
        text: str | None,
        metadata: dict[str, Any] | None,
        semantic: bool = False,
    ) -> MemoryRecord | None:
        with self._changing(self._path(key)):
            scope = self._load(key)
            found = next((e for e in scope.entries if e.id == id), None)
            if found is None:
                return None
            changed = msgspec.structs.replace(
                found,
                text=found.text if text is None else text,
                metadata=found.metadata if metadata is None else metadata,
                updated_at=time.time(),
            )
            scope.entries = [changed if e.id == id else e for e in scope.entries]
            self._write(key, scope)
            return changed

    def forget(self, key: MemoryKey, id: str) -> bool:
        with self._changing(self._path(key)):
            scope = self._load(key)
            kept = [e for e in scope.entries if e.id != id]
            if len(kept) == len(scope.entries):
                return False
            scope.entries = kept
            scope.steps.pop(id, None)
            self._write(key, scope)
            return True

    def recent(self, key: MemoryKey, *, limit: int) -> list[MemoryRecord]:
        return _newest(self._load(key).entries)[:limit]

    def _scopes(self, where: MemoryFilter) -> Iterator[tuple[Path, _ScopeFile]]:
        for namespace in sorted(where.namespaces):
            for path in sorted((self.directory / namespace).glob("*/*/*.json")):
                scope = self._read(path)
                if scope is not None and (where.slots is None or path.parts[-3] in where.slots):
                    yield path, scope

    def _admitted(self, where: MemoryFilter) -> list[MemoryRecord]:
        return [
            e
            for _, scope in self._scopes(where)
            for e in scope.entries
            if where.about(e.principal, scope.owner)
        ]

    def inspect(self, where: MemoryFilter, *, query: str | None, limit: int) -> list[MemoryRecord]:
        entries = self._admitted(where)
        if query is None:
            return _newest(entries)[:limit]
        return [hit.record for hit in _ranked(entries, terms(query), limit)]

    def erase(self, where: MemoryFilter, *, ids: list[str] | None) -> int:
        erased = 0
        for path, _ in list(self._scopes(where)):
            with self._changing(path):
                # read again under the lock: another process may have changed it since
                scope = self._read(path)
                if scope is not None:
                    erased += self._erase_in(path, scope, where, ids)
        return erased

    def _erase_in(
        self, path: Path, scope: _ScopeFile, where: MemoryFilter, ids: list[str] | None
    ) -> int:
        kept = [
            e
            for e in scope.entries
            if not (where.about(e.principal, scope.owner) and (ids is None or e.id in ids))
        ]
        if len(kept) == len(scope.entries):
            return 0
        erased = len(scope.entries) - len(kept)
        scope.entries = kept
        ids_kept = {e.id for e in kept}
        scope.steps = {id: s for id, s in scope.steps.items() if id in ids_kept}
        self._replace(path, scope)
        return erased

    def close(self) -> None:
        return None


def _newest(entries: list[MemoryRecord]) -> list[MemoryRecord]:
    return sorted(entries, key=lambda e: (-e.updated_at, e.id))


def _ranked(entries: list[MemoryRecord], words: list[str], limit: int) -> list[MemoryHit]:
    if not words:
        return []
    frequency: dict[str, int] = {}
    for entry in entries:
        for word in set(terms(entry.text)):
            frequency[word] = frequency.get(word, 0) + 1
    scored = [
        MemoryHit(
            record=e,
            score=overlap_score(words, e.text, documents=len(entries), frequency=frequency),
        )
        for e in entries
    ]
    hits = [h for h in scored if h.score > 0]
    hits.sort(key=lambda h: (-h.score, -h.record.updated_at))
    return hits[:limit]
