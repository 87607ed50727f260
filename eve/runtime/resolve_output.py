"""``resolve_output``: re-attach the class of a node's typed answer from the module map."""

from __future__ import annotations

import pydantic

from eve.errors import InvalidModuleExport
from eve.manifest import AgentNode
from eve.runtime.exports import load_resolved_module_export
from eve.runtime.module_map import ModuleMap
from eve.runtime.resolved import ResolvedOutput


async def resolve_output(node: AgentNode, module_map: ModuleMap) -> ResolvedOutput | None:
    """The node's ``output`` with its live pydantic class (None for a plain JSON Schema):
    the class keeps validators and coercions its JSON Schema cannot express, and is what
    ``RunResult.output`` holds."""
    output = node.config.output
    if output is None:
        return None
    if output.type is None:
        return ResolvedOutput(spec=output, model=None)
    where = output.type
    binding = node.bindings.get(where.source_id)
    path = binding.logical_path if binding else where.source_id
    head, *rest = where.qualname.split(".")
    value = await load_resolved_module_export(
        module_map,
        kind="output type",
        source_id=where.source_id,
        logical_path=path,
        export_name=head,
        node_id=node.node_id,
    )
    for name in rest:
        value = getattr(value, name, None)
    if not (isinstance(value, type) and issubclass(value, pydantic.BaseModel)):
        raise InvalidModuleExport(
            f"{path}: `{where.qualname}` was compiled as the output_schema class but is no "
            "longer a pydantic model: run `eve compile`",
            source_id=where.source_id,
            logical_path=path,
        )
    return ResolvedOutput(spec=output, model=value)
