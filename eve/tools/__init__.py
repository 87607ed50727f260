"""Tool authoring: ``from eve.tools import define_tool, tool, provider_tool``."""

from eve.authoring.context import ToolContext
from eve.authoring.tools import (
    ToolDefinition,
    define_tool,
    define_workflow_tool,
    provider_tool,
    tool,
)

__all__ = [
    "ToolContext",
    "ToolDefinition",
    "define_tool",
    "define_workflow_tool",
    "provider_tool",
    "tool",
]
