"""Which automatic built-ins a node gets, and binding them to the node's skills and catalog.

One pure function of the manifest node decides, so ``resolve_agent`` (which binds them) and
``eve info`` (which lists them) always agree, without either importing anything authored.
"""

from __future__ import annotations

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
from eve.manifest import AgentNode, FunctionToolEntry
from eve.runtime.resolved import ResolvedFunctionTool
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
