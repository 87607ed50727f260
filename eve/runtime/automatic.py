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
from eve.runtime.resolved import (
    ResolvedFunctionTool,
    ResolvedTool,
    ResolvedWorkflowTool,
)
from eve.runtime.validation import JsonSchemaValidator


def automatic_entries(node: AgentNode) -> list[FunctionToolEntry]:
    """The node's automatic built-ins, by name: ``eve__search`` when it has a catalog
    (deferred tools or skills), ``eve__skill`` when it has skills, ``eve__tool`` when it has
    deferred tools (with none, it would have nothing to call)."""
    entries = []
    catalog = catalog_of(node.tools, node.skills)
    if catalog:
        entries.append(search_declaration(catalog))
    if node.skills:
        entries.append(skill_declaration(node.skills))
    if catalog_tools(node.tools):
        entries.append(call_declaration())
    return entries


def bind_automatic(node: AgentNode, app_root: Path) -> list[ResolvedFunctionTool]:
    """The node's automatic built-ins, live; skill files are read relative to ``app_root``."""
    catalog = catalog_of(node.tools, node.skills)
    executes: dict[str, Execute] = {
        SEARCH_TOOL: searcher(catalog),
        SKILL_TOOL: skill_loader(node.skills, app_root),
        CALL_TOOL: call_refusal([t.name for t in node.tools], [s.name for s in node.skills]),
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
    tools: Sequence[ResolvedTool], skills: Sequence[SkillEntry], added: Sequence[ResolvedTool]
) -> list[ResolvedTool]:
    """``tools`` with ``added`` (a turn's MCP tools), and ``eve__search`` and ``eve__tool``
    bound again so the catalog holds the deferred ones among them; ``eve__skill`` stays."""
    kept = [t for t in tools if t.name not in (SEARCH_TOOL, CALL_TOOL)]
    runnable: list[ToolEntry] = [
        t.entry
        for t in [*kept, *added]
        if isinstance(t, ResolvedFunctionTool | ResolvedWorkflowTool)
        and t.name not in (SKILL_TOOL,)
    ]
    catalog = catalog_of(runnable, skills)
    automatic: list[ResolvedTool] = []
    if catalog:
        search = search_declaration(catalog)
        automatic.append(_bound(search, searcher(catalog)))
    if catalog_tools(runnable):
        refusal = call_refusal([e.name for e in runnable], [s.name for s in skills])
        automatic.append(_bound(call_declaration(), refusal))
    return [*kept, *added, *automatic]


def _bound(entry: FunctionToolEntry, execute: Execute) -> ResolvedFunctionTool:
    return ResolvedFunctionTool(
        entry=entry, execute=execute, validator=JsonSchemaValidator(entry.input_schema)
    )
