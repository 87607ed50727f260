"""``resolve_tool_definition``: from a declaration to a live tool, one branch per kind."""

from __future__ import annotations

from typing import assert_never

from eve.authoring.tools import FunctionTool, ProviderTool, ToolDefinition, WorkflowTool
from eve.errors import InvalidModuleExport
from eve.manifest import FunctionToolEntry, ProviderToolEntry, ToolEntry, WorkflowToolEntry
from eve.runtime.exports import load_definition
from eve.runtime.module_map import ModuleMap
from eve.runtime.resolved import (
    ResolvedFunctionTool,
    ResolvedProviderTool,
    ResolvedTool,
    ResolvedWorkflowTool,
)
from eve.runtime.validation import InputValidator, JsonSchemaValidator, PydanticValidator


def _validator(
    entry: FunctionToolEntry | WorkflowToolEntry, definition: FunctionTool | WorkflowTool
) -> InputValidator:
    # The live model keeps custom validators and coercions the JSON Schema cannot express.
    if definition.input_model is not None:
        return PydanticValidator(definition.input_model)
    return JsonSchemaValidator(entry.input_schema)


async def resolve_tool_definition(
    entry: ToolEntry, module_map: ModuleMap, node_id: str | None = None
) -> ResolvedTool:
    """Re-attach the live parts of one tool.

    * provider tools: declaration only; the module is never imported.
    * workflow tools: the module is loaded for the workflow body.
    * function tools: the live execute and the live schema from the module.
    """
    if isinstance(entry, ProviderToolEntry):
        return ResolvedProviderTool(entry=entry)
    definition = await load_definition(
        entry, module_map, node_id, kind="tool", definition_type=ToolDefinition
    )
    return bind_tool(entry, definition)


def bind_tool(entry: ToolEntry, definition: ToolDefinition) -> ResolvedTool:
    """Join a declaration with its live definition (refusing a definition of another kind)."""
    match entry:
        case FunctionToolEntry() if isinstance(definition, FunctionTool):
            return ResolvedFunctionTool(
                entry=entry,
                execute=definition.execute,
                validator=_validator(entry, definition),
                approval=definition.approval,
                to_model_output=definition.to_model_output,
            )
        case WorkflowToolEntry() if isinstance(definition, WorkflowTool):
            return ResolvedWorkflowTool(
                entry=entry,
                run=definition.run,
                validator=_validator(entry, definition),
                approval=definition.approval,
            )
        case ProviderToolEntry() if isinstance(definition, ProviderTool):
            return ResolvedProviderTool(entry=entry)
        case FunctionToolEntry() | WorkflowToolEntry() | ProviderToolEntry():
            raise InvalidModuleExport(
                f"{entry.logical_path} now defines a {type(definition).__name__} but was "
                f"compiled as a {entry.handling} tool: run `eve compile`",
                source_id=entry.source_id,
                logical_path=entry.logical_path,
            )
        case _:
            assert_never(entry)
