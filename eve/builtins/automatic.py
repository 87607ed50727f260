"""The built-ins a node gets without asking: their reserved names and how each is declared.

``builtin_tools`` in agent.py opts in to file and shell tools; these three come with what a
node holds instead. ``eve__skill`` comes with skills, ``eve__search`` with anything in the
catalog (deferred tools and skills), ``eve__tool`` with deferred tools. They are not in the
manifest: everything they are made from is (the skills' metadata, the tools' ``deferred``
flags), so the runtime derives them from a node the same way every time.
"""

from __future__ import annotations

from typing import Any

from eve.manifest import FunctionToolEntry

SEARCH_TOOL = "eve__search"
SKILL_TOOL = "eve__skill"
CALL_TOOL = "eve__tool"
AUTOMATIC_TOOLS = frozenset({SEARCH_TOOL, SKILL_TOOL, CALL_TOOL})


def declaration(name: str, description: str, input_schema: dict[str, Any]) -> FunctionToolEntry:
    """The tool entry of an automatic built-in, shaped like a compiled one so that ``eve info``
    and the loop treat it as any other tool (it has no module: ``logical_path`` is empty)."""
    assert name in AUTOMATIC_TOOLS, name
    return FunctionToolEntry(
        name=name,
        description=description,
        logical_path="",
        source_id=f"eve:builtins/{name}",
        input_schema=input_schema,
    )


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
