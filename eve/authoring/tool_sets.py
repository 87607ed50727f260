"""``ToolSet``: a named group of tools a framework plugin offers to every agent that opts in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eve.authoring.tools import ToolDefinition
from eve.errors import AuthoringError


@dataclass(frozen=True, kw_only=True)
class ToolSet:
    """Tools an agent gets with ``define_agent(tool_sets=(name,))``.

    Each tool is a ``define_tool`` / ``@tool`` definition bound to a module-level name of the
    module that made it: that name is the tool's name (as a file name is an authored tool's),
    and it is how the runtime finds the definition again without asking the plugin.
    """

    #: what agents opt in with; unique among installed plugins
    name: str
    tools: Sequence[ToolDefinition]
    #: one line for ``compile/tool-set-unknown`` to list beside the name
    description: str = ""

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise AuthoringError(f"ToolSet name {self.name!r} must be non-empty, without '/'")
        for value in self.tools:
            if not isinstance(value, ToolDefinition):
                raise AuthoringError(
                    f"ToolSet {self.name!r} holds {type(value).__name__}; its tools must be "
                    "made with define_tool, @tool or provider_tool"
                )
