"""``resolve_tool_definition``: the three branches from declaration to live tool."""

from __future__ import annotations

from eve.authoring.approval import ApprovalRule
from eve.authoring.tools import ToolDefinition
from eve.errors import InvalidModuleExport
from eve.manifest import ToolEntry
from eve.runtime.exports import load_definition
from eve.runtime.module_map import ModuleMap
from eve.runtime.resolved import ResolvedTool
from eve.runtime.validation import InputValidator, JsonSchemaValidator, PydanticValidator


def _validator(entry: ToolEntry, definition: ToolDefinition) -> InputValidator | None:
    # The live model keeps custom validators and coercions the JSON Schema cannot express.
    if definition.input_model is not None:
        return PydanticValidator(definition.input_model)
    if entry.input_schema is not None:
        return JsonSchemaValidator(entry.input_schema)
    return None


async def resolve_tool_definition(
    entry: ToolEntry, module_map: ModuleMap, node_id: str | None = None
) -> ResolvedTool:
    """Re-attach the live parts of one tool.

    * no local execute (provider tools): declaration only; the module is never imported.
    * workflow tools: the module is loaded for the workflow body; ``execute`` stays ``None``.
    * ordinary tools: the live execute and the live schema from the module.
    """
    if not entry.has_execute and entry.behavior.handling.kind == "provider-tool":
        return ResolvedTool(
            entry=entry,
            execute=None,
            validator=None,
            approval=ApprovalRule(kind=entry.approval.kind),
        )
    definition = await load_definition(
        entry, module_map, node_id, kind="tool", definition_type=ToolDefinition
    )
    return bind_tool(entry, definition)


def bind_tool(entry: ToolEntry, definition: ToolDefinition) -> ResolvedTool:
    """Join a declaration with its live definition (refusing a definition of another kind)."""
    if definition.kind != entry.behavior.handling.kind:
        raise InvalidModuleExport(
            f"{entry.logical_path} now defines a {definition.kind} tool but was compiled as "
            f"{entry.behavior.handling.kind}: run `eve compile`",
            source_id=entry.source_id,
            logical_path=entry.logical_path,
        )
    return ResolvedTool(
        entry=entry,
        execute=definition.execute if definition.kind == "dispatch" else None,
        workflow=definition.workflow,
        validator=_validator(entry, definition),
        approval=definition.approval,
        to_model_output=definition.to_model_output,
    )
