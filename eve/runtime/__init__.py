"""The runtime side of the artifacts: resolve a compiled agent back into live objects."""

from eve.runtime.exports import load_resolved_module_export
from eve.runtime.load import CompiledAgent, load_compiled_agent
from eve.runtime.module_map import ModuleMap, load_module_map
from eve.runtime.resolve_agent import resolve_agent
from eve.runtime.resolve_hook import resolve_hook_definition
from eve.runtime.resolve_tool import resolve_tool_definition
from eve.runtime.resolved import (
    ResolvedAgent,
    ResolvedFunctionTool,
    ResolvedHook,
    ResolvedProviderTool,
    ResolvedSkill,
    ResolvedTool,
    ResolvedWorkflowTool,
)

__all__ = [
    "CompiledAgent",
    "ModuleMap",
    "ResolvedAgent",
    "ResolvedFunctionTool",
    "ResolvedHook",
    "ResolvedProviderTool",
    "ResolvedSkill",
    "ResolvedTool",
    "ResolvedWorkflowTool",
    "load_compiled_agent",
    "load_module_map",
    "load_resolved_module_export",
    "resolve_agent",
    "resolve_hook_definition",
    "resolve_tool_definition",
]
