"""``define_memory``: a memory slot an agent keeps across sessions (``agent/memory.py`` or
``agent/memory/<name>.py``).

A declaration is data: compiling reads it into the manifest and the runtime binds the
slot's built-in tools (save, search, update, forget) to a store. Where the entries live is
the slot's provider: the session database by default (``database()``), or JSON files for
development (``files()``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from eve.errors import AuthoringError

#: whose the entries are: the session's, the caller's (the principal who sent the message,
#: across all their sessions), or the whole agent's (every caller shares them)
MemoryScope = Literal["session", "principal", "agent"]
#: how search ranks entries: full text (SQLite FTS5, PostgreSQL full text), or embeddings
#: of a local model (the ``memory-semantic`` extra): sqlite-vec's ``vec0`` on SQLite, blobs
#: ranked in process on PostgreSQL (docs/memory.md)
MemorySearch = Literal["keyword", "semantic"]
#: how the model reaches the slot's tools: offered in every request, or found in the catalog
#: (``eve__search``) and called through ``eve__tool``
MemoryExpose = Literal["tools", "catalog"]
SCOPES: tuple[MemoryScope, ...] = ("session", "principal", "agent")
#: the most entries ``recall=`` may put into the prompt
MAX_RECALL = 20
_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True, kw_only=True)
class DatabaseProvider:
    """The entries live in the session database (SQLite or PostgreSQL), in a table of their
    own (``eve_memories``)."""


@dataclass(frozen=True, kw_only=True)
class FileProvider:
    """The entries live as JSON files under ``directory`` (relative to the app root): one
    file per scope, for development; not for several workers at once."""

    directory: str = ".eve/memory"


MemoryProvider = DatabaseProvider | FileProvider


def database() -> DatabaseProvider:
    """The default provider: the session database, searched with its full-text index."""
    return DatabaseProvider()


def files(directory: str = ".eve/memory") -> FileProvider:
    """JSON files under ``directory`` (relative to the app root), for development."""
    if not directory or directory.startswith("/") or ".." in directory.split("/"):
        raise AuthoringError(
            f"files({directory!r}): the directory is relative to the app root and stays "
            "inside it (e.g. '.eve/memory')"
        )
    return FileProvider(directory=directory)


@dataclass(frozen=True, kw_only=True)
class MemoryDefinition:
    """One memory slot, as ``define_memory`` made it."""

    scope: MemoryScope
    provider: MemoryProvider
    #: what the slot holds: the model reads it in the tools' descriptions
    description: str
    #: how many of the most relevant entries go into the prompt at the start of each turn
    #: (searched with the message); 0: none, the model searches when it wants to
    recall: int
    search: MemorySearch
    expose: MemoryExpose
    #: who the agent is, for the ``agent`` and ``principal`` scopes; None: the app root's
    #: directory name (two agents sharing a database keep apart by it)
    namespace: str | None


def define_memory(
    *,
    scope: MemoryScope = "principal",
    provider: MemoryProvider | None = None,
    description: str = "",
    recall: int = 0,
    search: MemorySearch = "keyword",
    expose: MemoryExpose = "tools",
    namespace: str | None = None,
) -> MemoryDefinition:
    """Declare a memory slot: entries of text (with metadata and timestamps) the agent
    saves, searches, updates and forgets with built-in tools, kept across sessions.

    Args:
        scope: ``session`` (one conversation), ``principal`` (the caller, across their
            sessions; the default) or ``agent`` (shared by everyone).
        provider: ``database()`` (the default) or ``files(directory)``.
        description: what to remember here; the model reads it.
        recall: put this many of the entries most relevant to the message into the prompt
            at the start of each turn (0: off).
        search: ``keyword`` (full text, the default) or ``semantic`` (a local embedding
            model: ``pip install 'eve-durable[memory-semantic]'``).
        expose: ``tools`` (offered in every request) or ``catalog`` (found through
            ``eve__search``).
        namespace: who the agent is among others that share a database; the app root's
            directory name by default.
    """
    if scope not in SCOPES:
        raise AuthoringError(f"define_memory(scope={scope!r}): one of {', '.join(SCOPES)}")
    if search not in ("keyword", "semantic"):
        raise AuthoringError(f"define_memory(search={search!r}): 'keyword' or 'semantic'")
    if expose not in ("tools", "catalog"):
        raise AuthoringError(f"define_memory(expose={expose!r}): 'tools' or 'catalog'")
    if isinstance(recall, bool) or not isinstance(recall, int) or not 0 <= recall <= MAX_RECALL:
        raise AuthoringError(
            f"define_memory(recall={recall!r}): a number of entries from 0 (off) to {MAX_RECALL}"
        )
    if namespace is not None and not _NAMESPACE.match(namespace):
        raise AuthoringError(
            f"define_memory(namespace={namespace!r}): up to 64 letters, digits, '.', '_' "
            "or '-', starting with a letter or digit"
        )
    if provider is not None and not isinstance(provider, DatabaseProvider | FileProvider):
        raise AuthoringError(
            "define_memory(provider=...): database() or files(directory), from eve.memory"
        )
    return MemoryDefinition(
        scope=scope,
        provider=provider or DatabaseProvider(),
        description=description.strip(),
        recall=recall,
        search=search,
        expose=expose,
        namespace=namespace,
    )
