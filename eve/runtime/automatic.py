"""Which automatic built-ins a node gets, and binding them to the node's skills and catalog.

One pure function of the manifest node decides, so ``resolve_agent`` (which binds them) and
``eve info`` (which lists them) always agree, without either importing anything authored.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eve.authoring.approval import NEVER
from eve.authoring.tools import Execute
from eve.builtins.automatic import CALL_TOOL, SEARCH_TOOL, SKILL_TOOL
from eve.builtins.catalog import (
    call_declaration,
    call_refusal,
    catalog_of,
    catalog_tools,
    search_declaration,
    searcher,
)
from eve.builtins.skill import skill_declaration, skill_loader
from eve.manifest import AgentNode, FunctionToolEntry, SkillEntry, ToolEntry
from eve.runtime.memory import memory_entries
from eve.runtime.resolved import (
    ResolvedFunctionTool,
    ResolvedTool,
    ResolvedWorkflowTool,
)
from eve.runtime.validation import JsonSchemaValidator


def catalog_servers(node: AgentNode) -> list[str]:
    """The node's MCP connections whose tools are reached through the catalog."""
    return [c.name for c in node.connections if c.expose == "catalog"]


def automatic_entries(node: AgentNode) -> list[FunctionToolEntry]:
    """The node's automatic built-ins, by name: ``eve__search`` when it has a catalog
    (deferred tools, skills, or connections exposed through it), ``eve__skill`` when it has
    skills, ``eve__tool`` when it has deferred tools or such connections (with none, it
    would have nothing to call)."""
    entries = []
    tools = _own_tools(node)
    catalog = catalog_of(tools, node.skills)
    servers = catalog_servers(node)
    if catalog or servers:
        entries.append(search_declaration(catalog, servers))
    if node.skills:
        entries.append(skill_declaration(node.skills))
    if catalog_tools(tools) or servers:
        entries.append(call_declaration())
    return entries


def _own_tools(node: AgentNode) -> list[ToolEntry]:
    """The node's compiled tools and its memory tools (deferred when its slots say so)."""
    return [*node.tools, *memory_entries(node.memory)]


def bind_automatic(node: AgentNode, app_root: Path) -> list[ResolvedFunctionTool]:
    """The node's automatic built-ins, live; skill files are read relative to ``app_root``."""
    tools = _own_tools(node)
    catalog = catalog_of(tools, node.skills)
    executes: dict[str, Execute] = {
        SEARCH_TOOL: searcher(catalog),
        SKILL_TOOL: skill_loader(node.skills, app_root),
        CALL_TOOL: call_refusal([t.name for t in tools], [s.name for s in node.skills]),
    }
    return [
        ResolvedFunctionTool(
            entry=entry,
            execute=executes[entry.name],
            validator=JsonSchemaValidator(entry.input_schema),
            approval=NEVER,
        )
        for entry in automatic_entries(node)
    ]


def with_catalog_tools(
    tools: Sequence[ResolvedTool],
    skills: Sequence[SkillEntry],
    added: Sequence[ResolvedTool],
    servers: Sequence[str] = (),
) -> list[ResolvedTool]:
    """``tools`` with ``added`` (a turn's MCP tools), and ``eve__search`` and ``eve__tool``
    bound again so the catalog holds the deferred ones among them; ``eve__skill`` stays.
    ``servers``: the connections exposed through the catalog, listed or not yet."""
    kept = [t for t in tools if t.name not in (SEARCH_TOOL, CALL_TOOL)]
    runnable: list[ToolEntry] = [
        t.entry
        for t in [*kept, *added]
        if isinstance(t, ResolvedFunctionTool | ResolvedWorkflowTool)
        and t.name not in (SKILL_TOOL,)
    ]
    # the declaration counts the node's own entries only: the servers' are named
    own: list[ToolEntry] = [
        t.entry
        for t in kept
        if isinstance(t, ResolvedFunctionTool | ResolvedWorkflowTool) and _own_entry(t)
    ]
    catalog = catalog_of(runnable, skills)
    automatic: list[ResolvedTool] = []
    if catalog or servers:
        search = search_declaration(catalog_of(own, skills), servers)
        automatic.append(_bound(search, searcher(catalog)))
    if catalog_tools(runnable) or servers:
        refusal = call_refusal([e.name for e in runnable], [s.name for s in skills])
        automatic.append(_bound(call_declaration(), refusal))
    return [*kept, *added, *automatic]


def _own_entry(tool: ResolvedFunctionTool | ResolvedWorkflowTool) -> bool:
    """A runnable tool of the node itself, not of an MCP server."""
    if isinstance(tool, ResolvedFunctionTool):
        return tool.connection is None and tool.name != SKILL_TOOL
    return True


def _bound(entry: FunctionToolEntry, execute: Execute) -> ResolvedFunctionTool:
    return ResolvedFunctionTool(
        entry=entry, execute=execute, validator=JsonSchemaValidator(entry.input_schema)
    )
