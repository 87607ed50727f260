"""A node's system prompt and deps factory as the manifest declares them.

``instructions.md`` is text, stored as it is. ``instructions.py`` and ``define_agent(deps=...)``
are functions, which JSON cannot hold: the manifest records where each is (a module binding
made a runtime root, its export) and the runtime re-attaches the live function, as for a tool.
Neither is called here: both run per turn, where the session, its principal and its deps are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eve.artifacts import AGENT_DIR
from eve.compiler.bindings import source_id_for
from eve.compiler.discover import NodeFiles
from eve.manifest import Deps, DynamicInstructions, Instructions


@dataclass(frozen=True, kw_only=True)
class AgentExport:
    """Where a node's ``define_agent`` was found in its agent.py."""

    export_name: str
    factory: bool


def compile_instructions(
    app_root: Path, node: NodeFiles, dynamic: DynamicInstructions | None
) -> Instructions:
    """The node's prompt: instructions.md's text, and where instructions.py's function is
    (``dynamic``, found by the compiler's export rule)."""
    text = ""
    if node.instructions is not None:
        text = (app_root / node.instructions).read_text(encoding="utf-8").strip() + "\n"
    return Instructions(logical_path=node.instructions, text=text, dynamic=dynamic)


def deps_entry(node: NodeFiles, export: AgentExport | None) -> Deps | None:
    """Where the runtime finds the node's deps factory: its ``define_agent`` again."""
    if export is None or node.agent_module is None:
        return None
    return Deps(
        logical_path=node.agent_module,
        source_id=source_id_for(node.agent_module, node.root, AGENT_DIR),
        export_name=export.export_name,
        factory=export.factory,
    )
