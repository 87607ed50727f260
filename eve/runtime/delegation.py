"""What a node's sessions see: its tools, the tools it inherits, and its subagents as tools.

A subagent's session (a *delegated* session) has the subagent's own tools and, for every
tool of its parent's sessions that it does not define itself, the parent's, so a
subagent needs to define only what it does differently (the example's ``researcher``
defines its own ``get_price`` and inherits the rest). A tool with
``available_in_subagents=False`` is absent from every delegated session: it is not
inherited, and a subagent's own such tool is not offered either. An inherited tool keeps
its implementation: it is resolved in the module scope of the node that defines it.

Each direct subagent is offered to its parent's model as a tool named by its id, described
by its ``agent.py``, taking the message to send it. One pure function of the manifest
decides all of this, so ``resolve_agent`` and ``eve info`` agree without importing anything.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from eve.manifest import ROOT_NODE_ID, AgentNode, CompiledManifest, SubagentToolEntry, ToolEntry

SUBAGENT_INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "message": {
            "type": "string",
            "description": "What to ask the subagent: the task, with everything it needs "
            "to know. It does not see this conversation.",
        }
    },
    "required": ["message"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class ScopedTool:
    """A tool of a node's sessions and the node whose module scope implements it."""

    entry: ToolEntry
    owner: str


def parent_of(node_id: str) -> str:
    """``researcher/reviewer`` → ``researcher``; a top-level subagent's parent is the root."""
    head, _, _ = node_id.rpartition("/")
    return head or ROOT_NODE_ID


def session_tools(manifest: CompiledManifest, node_id: str) -> list[ScopedTool]:
    """The compiled tools a session of ``node_id`` has: its own, then the inherited ones."""
    node = manifest.nodes[node_id]
    if node_id == ROOT_NODE_ID:
        return [ScopedTool(entry, node_id) for entry in node.tools]
    own = [ScopedTool(entry, node_id) for entry in node.tools if entry.available_in_subagents]
    defined = {entry.name for entry in node.tools}
    inherited = [
        scoped
        for scoped in session_tools(manifest, parent_of(node_id))
        if scoped.entry.available_in_subagents and scoped.entry.name not in defined
    ]
    return own + inherited


def subagent_entry(child: AgentNode) -> SubagentToolEntry:
    """A direct subagent as its parent's model sees it."""
    name = child.node_id.rpartition("/")[2]
    return SubagentToolEntry(
        name=name,
        description=child.config.description or f"Delegate a task to the {name} subagent.",
        logical_path=child.root,
        source_id=f"eve:subagent/{child.node_id}",
        input_schema=SUBAGENT_INPUT_SCHEMA,
        node_id=child.node_id,
    )


def subagent_entries(manifest: CompiledManifest, node_id: str) -> list[SubagentToolEntry]:
    return [subagent_entry(manifest.nodes[child]) for child in manifest.nodes[node_id].subagents]


def session_node(manifest: CompiledManifest, node_id: str) -> AgentNode:
    """The node with the tool list its sessions have (for the catalog and ``eve info``)."""
    node = manifest.nodes[node_id]
    return msgspec.structs.replace(
        node, tools=[scoped.entry for scoped in session_tools(manifest, node_id)]
    )
