"""The agent info document: what the compiled agent holds, read from the artifacts only."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec

from eve.compiler import check_artifacts
from eve.errors import StaleArtifacts
from eve.manifest import (
    DIAGNOSTICS_PATH,
    DISCOVERY_MANIFEST_PATH,
    MANIFEST_PATH,
    METADATA_PATH,
    MODULE_MAP_PATH,
    ROOT_NODE_ID,
    AgentNode,
    DiagnosticsFile,
    decode,
)
from eve.runtime.automatic import automatic_entries
from eve.runtime.load import read_manifest


class ToolInfo(msgspec.Struct, kw_only=True):
    name: str
    description: str
    #: where it comes from: ``tools/x.py``, ``eve:builtins/bash``, ``plugin:<entry point>/x``
    source: str
    handling: str
    has_execute: bool
    approval: str
    deferred: bool
    input_schema: dict[str, Any] | None


class SkillInfo(msgspec.Struct, kw_only=True):
    name: str
    description: str


class HookInfo(msgspec.Struct, kw_only=True):
    name: str
    source: str
    events: list[str]


class NodeInfo(msgspec.Struct, kw_only=True):
    #: "" for the root agent, else the subagent path (``researcher/reviewer``)
    path: str
    node_id: str
    model: str | None
    description: str | None
    instructions_path: str | None
    tools: list[ToolInfo]
    skills: list[SkillInfo]
    hooks: list[HookInfo]
    subagents: list[str]


class DiagnosticCounts(msgspec.Struct, kw_only=True):
    errors: int
    warnings: int


class AgentInfo(msgspec.Struct, kw_only=True):
    """The stable ``eve info --json`` document (see docs/cli.md)."""

    kind: Literal["eve-agent-info"] = "eve-agent-info"
    version: int = 1
    status: Literal["fresh", "stale"]
    stale_sources: list[str]
    diagnostics: DiagnosticCounts
    agent: NodeInfo
    subagents: list[NodeInfo]
    artifacts: dict[str, str]


def _node_info(node: AgentNode) -> NodeInfo:
    return NodeInfo(
        path="" if node.node_id == ROOT_NODE_ID else node.node_id,
        node_id=node.node_id,
        model=node.config.model,
        description=node.config.description,
        instructions_path=node.instructions.logical_path,
        tools=[
            ToolInfo(
                name=t.name,
                description=t.description,
                source=t.source_id,
                handling=t.behavior.handling.kind,
                has_execute=t.has_execute,
                approval=t.approval.kind,
                deferred=t.deferred,
                input_schema=t.input_schema,
            )
            # the automatic built-ins (eve__search, eve__skill, eve__tool) after the node's own
            for t in [*node.tools, *automatic_entries(node)]
        ],
        skills=[SkillInfo(name=s.name, description=s.description) for s in node.skills],
        hooks=[HookInfo(name=h.name, source=h.logical_path, events=h.events) for h in node.hooks],
        subagents=list(node.subagents),
    )


def agent_info(root: Path) -> AgentInfo:
    """What ``eve info --json`` and ``GET /eve/v1/info`` report, from the artifacts only."""
    manifest = read_manifest(root / MANIFEST_PATH)
    report = check_artifacts(root)
    try:
        diagnostics = decode((root / DIAGNOSTICS_PATH).read_bytes(), DiagnosticsFile).diagnostics
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as error:
        raise StaleArtifacts(
            f"{DIAGNOSTICS_PATH} is missing or unreadable ({error}): run `eve compile`"
        ) from error
    return AgentInfo(
        status="fresh" if report.fresh else "stale",
        stale_sources=sorted({*report.added, *report.removed, *report.changed}),
        diagnostics=DiagnosticCounts(
            errors=sum(d.severity == "error" for d in diagnostics),
            warnings=sum(d.severity == "warning" for d in diagnostics),
        ),
        agent=_node_info(manifest.nodes[ROOT_NODE_ID]),
        subagents=[_node_info(n) for k, n in sorted(manifest.nodes.items()) if k != ROOT_NODE_ID],
        artifacts={
            "discovery_manifest": DISCOVERY_MANIFEST_PATH,
            "diagnostics": DIAGNOSTICS_PATH,
            "manifest": MANIFEST_PATH,
            "module_map": MODULE_MAP_PATH,
            "metadata": METADATA_PATH,
        },
    )
