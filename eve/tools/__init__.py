"""Tool authoring: ``from eve.tools import define_tool, tool, provider_tool``."""

from eve.authoring.context import ToolContext
from eve.authoring.tools import (
    ToolDefinition,
    define_tool,
    define_workflow_tool,
    provider_tool,
    tool,
)
from eve.authoring.workflow import Question, WorkflowContext

__all__ = [
    "Question",
    "ToolContext",
    "ToolDefinition",
    "WorkflowContext",
    "define_tool",
    "define_workflow_tool",
    "provider_tool",
    "tool",
]
