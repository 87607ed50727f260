"""A node's typed answer (``define_agent(output_schema=...)``) as the manifest declares it.

A pydantic class cannot be written to JSON, so, as for a tool, the manifest records its
schema and *where* the class is (the binding of the module that defines it, and its
qualified name); the runtime re-attaches the class from the module map. The module is made a
runtime root, so it gets a loader and its imports join the runtime closure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pydantic

from eve._authored import module_id_for
from eve.compiler.load import LoadFailure
from eve.compiler.normalize import json_ready
from eve.manifest import Output, OutputType


@dataclass(frozen=True, kw_only=True)
class CompiledOutput:
    output: Output
    #: the authored module defining the class: a runtime root of the node (None for a schema)
    runtime_root: str | None


def compile_output(
    schema: type[pydantic.BaseModel] | dict[str, Any],
    *,
    retries: int,
    agent_module: str,
    sources: dict[str, str],
    source_id_of: Callable[[str], str],
) -> CompiledOutput:
    """The manifest's ``Output`` for ``output_schema``; ``LoadFailure`` when it cannot be one.

    ``source_id_of`` maps an authored path to its source id in the node.
    """
    if isinstance(schema, dict):
        plain = json_ready(schema, "output_schema", agent_module, generated=False) or {}
        _check_object(plain, agent_module)
        return CompiledOutput(output=Output(json_schema=plain, retries=retries), runtime_root=None)
    path = _defining_file(schema, agent_module, sources)
    plain = json_ready(schema.model_json_schema(), "output_schema", path, generated=True) or {}
    _check_object(plain, agent_module)
    where = OutputType(source_id=source_id_of(path), qualname=schema.__qualname__)
    return CompiledOutput(
        output=Output(json_schema=plain, type=where, retries=retries), runtime_root=path
    )


def _defining_file(
    schema: type[pydantic.BaseModel], agent_module: str, sources: dict[str, str]
) -> str:
    name = f"{schema.__module__}.{schema.__qualname__}"
    if "<locals>" in schema.__qualname__:
        raise LoadFailure(
            "compile/output-type-invalid",
            f"{agent_module}: output_schema {name} is defined inside a function; define it at "
            "the top level of a module under agent/, where the runtime can import it",
            path=agent_module,
        )
    by_module = {module_id_for(p): p for p in sources if p.endswith(".py")}
    path = by_module.get(schema.__module__)
    if path is None:
        raise LoadFailure(
            "compile/output-type-invalid",
            f"{agent_module}: output_schema {name} is not defined under agent/; define the "
            "class in agent.py or a module under agent/lib/ (eve binds that module for the "
            "runtime), or pass its JSON Schema instead",
            path=agent_module,
        )
    return path


def _check_object(schema: dict[str, Any], agent_module: str) -> None:
    # The answer goes to the model as a tool's input where the provider has no structured
    # output, and tool inputs are objects in every provider's API.
    if schema.get("type") != "object":
        raise LoadFailure(
            "compile/output-type-invalid",
            f'{agent_module}: output_schema must describe an object ("type": "object"), '
            "since the answer is a tool call's input where the provider has no structured "
            "output; wrap other values in a field",
            path=agent_module,
        )
