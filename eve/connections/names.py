"""The name the model calls an MCP tool by: ``<connection>__<tool>``, within providers' limits.

Anthropic and OpenAI both require a tool name to match ``^[a-zA-Z0-9_-]{1,64}$``
(https://docs.anthropic.com/en/docs/build-with-claude/tool-use "name" and
https://platform.openai.com/docs/api-reference/chat/create ``tools[].function.name``). An
MCP server may name a tool with any characters and any length, so a name that does not fit
is made to: other characters become ``_`` and a name too long is cut, and either way a
suffix of 8 hex digits of the tool's own name's sha256 keeps it unique and the same on every
listing. Names that fit are left as they are.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from eve.errors import MCPToolNameClash

#: what both providers accept as a tool name
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_TOOL_NAME = 64
SEPARATOR = "__"
_OTHER = re.compile(r"[^a-zA-Z0-9_-]")


def model_tool_name(connection: str, tool: str) -> str:
    """The name the model sees for the server tool ``tool`` of ``connection``."""
    plain = f"{connection}{SEPARATOR}{tool}"
    if TOOL_NAME.match(plain):
        return plain
    suffix = "_" + hashlib.sha256(tool.encode()).hexdigest()[:8]
    prefix = f"{connection}{SEPARATOR}"
    room = MAX_TOOL_NAME - len(prefix) - len(suffix)
    return prefix + _OTHER.sub("_", tool)[:room] + suffix


def model_tool_names(connection: str, tools: Sequence[str]) -> dict[str, str]:
    """Each server tool's model-visible name; ``MCPToolNameClash`` when two share one."""
    names: dict[str, str] = {}
    taken: dict[str, str] = {}
    for tool in tools:
        name = model_tool_name(connection, tool)
        if name in taken:
            raise MCPToolNameClash(
                f"connection {connection!r}: tools {taken[name]!r} and {tool!r} would both be "
                f"called {name!r}; block one of them with block_tools=[...]",
                connection=connection,
                name=name,
            )
        taken[name] = tool
        names[tool] = name
    return names
