"""Re-attach a node's per-turn functions: its deps factory and its ``instructions.py``.

A subagent that declares no deps factory inherits the nearest caller's: the factory, not an
object, since the child's turn may run in a workflow of its own, on another worker, or be
recovered apart from its caller's turn. Each turn builds its own deps with it.
"""

from __future__ import annotations

from eve.authoring.agent import AgentDefinition
from eve.authoring.instructions import InstructionsDefinition
from eve.errors import InvalidModuleExport
from eve.manifest import ROOT_NODE_ID, CompiledManifest
from eve.runtime.delegation import parent_of
from eve.runtime.exports import load_definition
from eve.runtime.module_map import ModuleMap
from eve.runtime.resolved import ResolvedDeps, ResolvedInstructions


def deps_owner(manifest: CompiledManifest, node_id: str) -> str | None:
    """The node whose deps factory ``node_id``'s turns call: its own, else its nearest
    caller's that declares one; None when no node up to the root does."""
    current = node_id
    while True:
        if manifest.nodes[current].config.deps is not None:
            return current
        if current == ROOT_NODE_ID:
            return None
        current = parent_of(current)


async def resolve_deps(
    manifest: CompiledManifest, module_map: ModuleMap, node_id: str
) -> ResolvedDeps | None:
    """The live factory of ``node_id``'s deps (own or inherited), from its owner's agent.py."""
    owner = deps_owner(manifest, node_id)
    if owner is None:
        return None
    entry = manifest.nodes[owner].config.deps
    assert entry is not None, "deps_owner returns a node that declares deps"
    definition = await load_definition(
        entry, module_map, owner, kind="agent", definition_type=AgentDefinition
    )
    factory = definition.config.deps
    if factory is None:
        raise InvalidModuleExport(
            f"{entry.logical_path} no longer passes deps= to define_agent, but was compiled "
            "with it: run `eve compile`",
            source_id=entry.source_id,
            logical_path=entry.logical_path,
        )
    return ResolvedDeps(factory=factory, owner=owner, logical_path=entry.logical_path)


async def resolve_instructions(
    manifest: CompiledManifest, module_map: ModuleMap, node_id: str
) -> ResolvedInstructions | None:
    """The live function of ``node_id``'s instructions.py, if it has one."""
    entry = manifest.nodes[node_id].instructions.dynamic
    if entry is None:
        return None
    definition = await load_definition(
        entry,
        module_map,
        node_id,
        kind="instructions",
        definition_type=InstructionsDefinition,
    )
    return ResolvedInstructions(render=definition.render, logical_path=entry.logical_path)
