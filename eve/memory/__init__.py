"""Memory that outlives a session: ``define_memory`` for authors, and the stores behind it.

``agent/memory.py`` (or ``agent/memory/<name>.py``) declares a slot; eve gives the agent
tools to save, search, update and forget its entries, kept in the session database
(``eve.memory.sql``) or in files (``eve.memory.file_store``). See docs/memory.md.
"""

from __future__ import annotations

from eve.authoring.memory import (
    DatabaseProvider,
    FileProvider,
    MemoryDefinition,
    database,
    define_memory,
    files,
)

__all__ = [
    "DatabaseProvider",
    "FileProvider",
    "MemoryDefinition",
    "database",
    "define_memory",
    "files",
]
