"""Tool authoring: ``from eve.tools import define_tool, tool, provider_tool`` (and ``ToolSet``
for plugins)."""

from eve.authoring.context import ToolContext
from eve.authoring.tool_sets import ToolSet
from eve.authoring.tools import (
    ProviderTool,
    ToolDefinition,
    define_tool,
    define_workflow_tool,
    provider_tool,
    tool,
)
from eve.authoring.workflow import Question, WorkflowContext

__all__ = [
    "ProviderTool",
    "Question",
    "ToolContext",
    "ToolDefinition",
    "ToolSet",
    "WorkflowContext",
    "define_tool",
    "define_workflow_tool",
    "provider_tool",
    "tool",
]
