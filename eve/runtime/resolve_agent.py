"""``resolve_agent``: manifest + module map (+ node id) → ``ResolvedAgent``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from eve.authoring.auth import AuthDefinition
from eve.errors import ResolveAgentError, StaleArtifacts
from eve.manifest import ROOT_NODE_ID, SCHEMA_VERSION, AuthEntry, CompiledManifest
from eve.runtime.automatic import bind_automatic
from eve.runtime.connections import resolve_connection
from eve.runtime.delegation import session_node, session_tools, subagent_entries
from eve.runtime.exports import load_definition
from eve.runtime.module_map import ModuleMap
from eve.runtime.resolve_dynamic import resolve_deps, resolve_instructions
from eve.runtime.resolve_hook import resolve_hook_definition
from eve.runtime.resolve_output import resolve_output
from eve.runtime.resolve_tool import resolve_tool_definition
from eve.runtime.resolved import (
    ResolvedAgent,
    ResolvedHook,
    ResolvedSkill,
    ResolvedSubagent,
    ResolvedTool,
)
from eve.runtime.validation import JsonSchemaValidator


def check_artifacts_match(manifest: CompiledManifest, module_map: ModuleMap) -> None:
    """Refuse a module map from another compile before any authored code can run."""
    if module_map.fingerprint != manifest.fingerprint or module_map.schema_version != (
        SCHEMA_VERSION
    ):
        raise StaleArtifacts(
            f"the module map (fingerprint {module_map.fingerprint[:19]}…) does not belong to the "
            f"manifest ({manifest.fingerprint[:19]}…): the artifacts are from different "
            "compiles. Run `eve compile`.",
            manifest_fingerprint=manifest.fingerprint,
            module_map_fingerprint=module_map.fingerprint,
        )


async def resolve_agent(
    manifest: CompiledManifest,
    module_map: ModuleMap,
    node_id: str | None = None,
    *,
    app_root: Path | str | None = None,
) -> ResolvedAgent:
    """Resolve one node as its sessions see it (``runtime.delegation``): its tools and the
    ones it inherits, and hooks, concurrently (their factories may await), in manifest
    order; its subagents as tools; then the automatic built-ins the node's skills and
    deferred tools call for (``eve__search``, ``eve__skill``, ``eve__tool``). Skills are
    metadata and pass through as declared; their files are read on demand relative to
    ``app_root`` (the current directory if not given)."""
    check_artifacts_match(manifest, module_map)
    node_key = node_id or ROOT_NODE_ID
    node = manifest.nodes.get(node_key)
    if node is None:
        known = ", ".join(sorted(manifest.nodes))
        raise ResolveAgentError(
            f'no agent node "{node_key}" in the manifest (known: {known})', node_id=node_key
        )
    tools: list[ResolvedTool] = list(
        await asyncio.gather(
            *(
                resolve_tool_definition(scoped.entry, module_map, scoped.owner)
                for scoped in session_tools(manifest, node_key)
            )
        )
    )
    subagents: list[ResolvedTool] = [
        ResolvedSubagent(entry=entry, validator=JsonSchemaValidator(entry.input_schema))
        for entry in subagent_entries(manifest, node_key)
    ]
    hooks: list[ResolvedHook] = list(
        await asyncio.gather(
            *(resolve_hook_definition(entry, module_map, node_key) for entry in node.hooks)
        )
    )
    # absolute now, so a later chdir cannot send skill reads elsewhere
    root = Path(app_root if app_root is not None else ".").resolve()
    connections = list(
        await asyncio.gather(
            *(
                resolve_connection(entry, module_map, node_key, app_root=root)
                for entry in node.connections
            )
        )
    )
    return ResolvedAgent(
        node_id=node_key,
        config=node.config,
        instructions=node.instructions.text,
        tools=[*tools, *subagents, *bind_automatic(session_node(manifest, node_key), root)],
        skills=[ResolvedSkill(entry=skill) for skill in node.skills],
        hooks=hooks,
        connections=connections,
        memory=list(node.memory),
        subagents=list(node.subagents),
        sandbox=node.sandbox,
        output=await resolve_output(node, module_map),
        auth=await _resolve_auth(node.auth, module_map, node_key),
        deps=await resolve_deps(manifest, module_map, node_key),
        dynamic_instructions=await resolve_instructions(manifest, module_map, node_key),
    )


async def _resolve_auth(
    entry: AuthEntry | None, module_map: ModuleMap, node_id: str
) -> AuthDefinition | None:
    if entry is None:
        return None
    return await load_definition(
        entry, module_map, node_id, kind="auth", definition_type=AuthDefinition
    )
