"""Memory slot declarations into manifest entries (``memory.py``, ``memory/<name>.py``).

A slot is data all the way through: the manifest records its scope, provider and search,
and nothing of its module is needed at run time (its tools are eve's own).
"""

from __future__ import annotations

from typing import assert_never

from eve.authoring.memory import DatabaseProvider, FileProvider, MemoryDefinition
from eve.manifest import (
    DatabaseMemoryProvider,
    FileMemoryProvider,
    MemoryEntry,
    MemoryProviderEntry,
)


def _provider(definition: MemoryDefinition) -> MemoryProviderEntry:
    provider = definition.provider
    match provider:
        case DatabaseProvider():
            return DatabaseMemoryProvider()
        case FileProvider():
            return FileMemoryProvider(directory=provider.directory)
        case _:
            assert_never(provider)


def memory_entry(
    definition: MemoryDefinition, *, name: str, logical_path: str, source_id: str, export_name: str
) -> MemoryEntry:
    """The manifest entry of the slot ``name`` declared in ``logical_path``."""
    return MemoryEntry(
        name=name,
        description=definition.description,
        scope=definition.scope,
        provider=_provider(definition),
        search=definition.search,
        recall=definition.recall,
        expose=definition.expose,
        namespace=definition.namespace,
        logical_path=logical_path,
        source_id=source_id,
        export_name=export_name,
    )
