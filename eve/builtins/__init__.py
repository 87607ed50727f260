"""The tools eve ships: the names ``builtin_tools`` in agent.py accepts and their modules.

Each module exposes its ``ToolDefinition`` as ``default``. The compiler imports a module
only when an agent lists its name, so nothing here imports the tools themselves. The
automatic built-ins (``eve__search``, ``eve__skill``, ``eve__tool``; see ``automatic``) are
not opted in to and not compiled: the runtime derives them from a node's skills and
deferred tools.

Internal: an agent names built-in tools in ``define_agent(builtin_tools=...)``; nothing here
is imported by authors (docs/architecture.md, "The public surface").
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from eve.authoring.agent import BUILTIN_TOOL_NAMES

#: built-in tool name → the module id that defines it, e.g. ``"bash" → "eve.builtins.bash"``
BUILTIN_TOOLS: Mapping[str, str] = MappingProxyType(
    {name: f"{__name__}.{name}" for name in BUILTIN_TOOL_NAMES}
)

__all__ = ["BUILTIN_TOOLS"]
