"""Sandbox declarations into manifest entries (``sandbox.py`` + ``sandbox/workspace/**``).

A sandbox is data all the way through: the manifest records its provider, network, limits
and the files that seed each session's workspace, and nothing of ``sandbox.py`` is imported
at run time. A subagent without a ``sandbox.py`` runs its commands in its parent's.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from eve.authoring.sandbox import SandboxDefinition
from eve.compiler.diagnostics import DiagnosticSink
from eve.manifest import ROOT_NODE_ID, AgentNode, SandboxEntry, SandboxLimitsEntry

_MIB = 1024 * 1024


def sandbox_entry(
    definition: SandboxDefinition,
    *,
    logical_path: str,
    workspace_files: list[str],
    app_root: Path,
    sink: DiagnosticSink,
    node_id: str,
) -> SandboxEntry | None:
    """The manifest entry of the sandbox ``logical_path`` declares; None (and an error
    diagnostic) when its seed files alone are over its workspace cap."""
    limits = definition.limits
    where = {"source_path": logical_path, "node_id": node_id}
    if definition.allow_hosts:
        # bwrap has a network namespace or none: per-host filtering needs a proxy or
        # nftables rules eve does not set up, so say what the list really does
        sink.warning(
            "compile/sandbox-hosts-not-filtered",
            f"allow_hosts={list(definition.allow_hosts)} cannot be enforced per host: the "
            "sandbox shares the whole network with commands (docs/sandbox.md)",
            **where,
        )
    if definition.provider == "local":
        sink.warning(
            "compile/sandbox-local-unsafe",
            "provider='local' runs commands as eve runs, unconfined: they can read every file "
            "eve can, reach the network and exhaust the machine (docs/sandbox.md)",
            **where,
        )
    seeded = sum((app_root / path).stat().st_size for path in workspace_files)
    if seeded > limits.workspace_mb * _MIB:
        sink.error(
            "compile/sandbox-workspace-too-large",
            f"sandbox/workspace/ holds {seeded:,} bytes, over the workspace cap of "
            f"{limits.workspace_mb} MiB (SandboxLimits(workspace_mb=...)): raise the cap or "
            "seed fewer files",
            **where,
        )
        return None
    return SandboxEntry(
        provider=definition.provider,
        network=definition.network or bool(definition.allow_hosts),
        allow_hosts=list(definition.allow_hosts),
        limits=SandboxLimitsEntry(
            cpu_seconds=limits.cpu_seconds,
            memory_mb=limits.memory_mb,
            processes=limits.processes,
            file_size_mb=limits.file_size_mb,
            wall_seconds=limits.wall_seconds,
            workspace_mb=limits.workspace_mb,
        ),
        workspace_files=sorted(workspace_files),
        logical_path=logical_path,
    )


def inherit_sandboxes(nodes: dict[str, AgentNode]) -> dict[str, AgentNode]:
    """Every node without a sandbox of its own takes its parent's (``nodes`` lists parents
    before their subagents, as discovery walks them)."""
    out: dict[str, AgentNode] = {}
    for node_id, node in nodes.items():
        out[node_id] = node
        if node.sandbox is None and node_id != ROOT_NODE_ID:
            parent = node_id.rpartition("/")[0] or ROOT_NODE_ID
            inherited = out[parent].sandbox if parent in out else None
            out[node_id] = msgspec.structs.replace(node, sandbox=inherited)
    return out
