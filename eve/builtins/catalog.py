"""``eve__search`` and ``eve__tool``: how the model finds and calls what its tool list omits.

The catalog is a node's deferred tools and its skills. A deferred tool stays out of the tool
list sent with every request, so a large toolbox costs the model nothing until it asks:
``eve__search`` finds entries by the words of a query, ``eve__tool`` calls a tool by name.
The loop runs an ``eve__tool`` call *as the tool it names* (see
``eve.execution.catalog_calls``), so the ``eve__tool`` execute here only ever answers
calls that name nothing runnable, with a result that says what to do instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from eve.authoring.context import ToolContext
from eve.authoring.tools import Execute
from eve.builtins.automatic import (
    AUTOMATIC_TOOLS,
    CALL_TOOL,
    SEARCH_TOOL,
    SKILL_TOOL,
    declaration,
    plural,
)
from eve.errors import ToolInputInvalid
from eve.manifest import FunctionToolEntry, SkillEntry, ToolEntry, WorkflowToolEntry

#: a search shows at most this many entries, best first, and says how many it left out
SEARCH_MAX_RESULTS = 20
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, kw_only=True)
class CatalogEntry:
    """One thing ``eve__search`` can find."""

    name: str
    kind: Literal["tool", "skill"]
    description: str
    #: what ``eve__tool``'s ``input`` must match (tools only)
    input_schema: dict[str, Any] | None = None

    def shown(self) -> dict[str, Any]:
        entry = {"name": self.name, "kind": self.kind, "description": self.description}
        return entry if self.kind == "skill" else {**entry, "input_schema": self.input_schema}

    def words(self) -> list[str]:
        # names are snake_case or kebab-case: "gift_wrap" is found by "gift" and by "wrap"
        return _WORD.findall(f"{self.name} {self.description}".lower())


def catalog_tools(tools: Sequence[ToolEntry]) -> list[FunctionToolEntry | WorkflowToolEntry]:
    """The deferred tools (a provider tool is never deferred: the provider runs it)."""
    return [t for t in tools if isinstance(t, FunctionToolEntry | WorkflowToolEntry) and t.deferred]


def catalog_of(tools: Sequence[ToolEntry], skills: Sequence[SkillEntry]) -> list[CatalogEntry]:
    """What a node's ``eve__search`` searches: its deferred tools, then its skills."""
    return [
        *(
            CatalogEntry(
                name=t.name, kind="tool", description=t.description, input_schema=t.input_schema
            )
            for t in catalog_tools(tools)
        ),
        *(CatalogEntry(name=s.name, kind="skill", description=s.description) for s in skills),
    ]


def search(catalog: Sequence[CatalogEntry], query: str) -> str:
    """The entries that match ``query``, best first, as JSON text.

    A query word matches an entry when a word of its name or description starts with it,
    ignoring case, or is a start of it at least four letters long (so ``gifts`` finds
    ``gift``); entries matching more of the query's words come first, then by name.
    One-letter words are ignored, and a query without words lists every entry.
    """
    wanted = {word for word in _WORD.findall(query.lower()) if len(word) > 1}
    scored = []
    for entry in catalog:
        words = entry.words()
        score = sum(any(_matches(q, w) for w in words) for q in wanted)
        if score or not wanted:
            scored.append((-score, entry.name, entry))
    if not scored:
        return (
            f"nothing in the catalog matches {query!r} (it holds "
            f"{_holdings(catalog)}): try other words, or an empty query to list everything"
        )
    shown = [entry.shown() for _, _, entry in sorted(scored)[:SEARCH_MAX_RESULTS]]
    text = msgspec.json.encode(shown).decode()
    left = len(scored) - len(shown)
    return text + (f"\n[{left} more matched; narrow the query to see them]" if left else "")


def _matches(query_word: str, word: str) -> bool:
    return word.startswith(query_word) or (len(word) >= 4 and query_word.startswith(word))


def _holdings(catalog: Sequence[CatalogEntry]) -> str:
    tools = sum(entry.kind == "tool" for entry in catalog)
    return f"{plural(tools, 'tool')} and {plural(len(catalog) - tools, 'skill')}"


def search_declaration(
    catalog: Sequence[CatalogEntry], servers: Sequence[str] = ()
) -> FunctionToolEntry:
    """``eve__search`` as the model sees it, saying what the catalog holds: ``catalog``'s
    tools and skills, and the tools of the MCP ``servers`` exposed through it, named but
    not counted. A turn lists those servers only when it first searches or calls one of
    their tools, and the declaration must read the same before and after, or the step
    after the listing would miss the provider's prompt cache."""
    assert catalog or servers, "eve__search comes only with a catalog"
    tools = sum(entry.kind == "tool" for entry in catalog)
    skills = len(catalog) - tools
    callable_ = []
    if tools:
        callable_.append(f"{plural(tools, 'tool')} kept out of your tool list")
    if servers:
        server = "MCP server" if len(servers) == 1 else "MCP servers"
        callable_.append(f"the tools of the {server} {', '.join(servers)}")
    holds = [f"{' and '.join(callable_)} (call with {CALL_TOOL})"] if callable_ else []
    if skills:
        holds.append(f"{plural(skills, 'skill')} (load with {SKILL_TOOL})")
    return declaration(
        SEARCH_TOOL,
        f"Search the catalog: {' and '.join(holds)}. Finds the entries whose name or "
        "description has words starting with the query's words, ignoring case, best matches "
        "first; an empty query lists everything. Each result gives the name, the kind (tool "
        "or skill), the description and, for a tool, its input schema.",
        {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words for what you need, e.g. what the tool should do.",
                }
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    )


def call_declaration() -> FunctionToolEntry:
    """``eve__tool`` as the model sees it."""
    return declaration(
        CALL_TOOL,
        "Call a catalog tool, one kept out of your tool list, by its name. Find it and its "
        f"input schema with {SEARCH_TOOL} first; `input` is that tool's input.",
        {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": f"The tool's name, as {SEARCH_TOOL} gives it.",
                },
                "input": {
                    "type": "object",
                    "description": "The tool's input, matching its input schema.",
                },
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    )


def searcher(catalog: Sequence[CatalogEntry]) -> Execute:
    """``eve__search``'s execute over this catalog."""
    entries = list(catalog)

    # async, though it never waits: a sync execute would be sent to a worker thread

    async def search_catalog(data: dict[str, Any], ctx: ToolContext) -> str:
        return search(entries, data["query"])

    return search_catalog


def call_refusal(tool_names: Sequence[str], skill_names: Sequence[str]) -> Execute:
    """``eve__tool``'s execute: the answer to a call the loop could not run as an entry."""
    tools, skills = frozenset(tool_names), frozenset(skill_names)

    async def refuse(data: dict[str, Any], ctx: ToolContext) -> str:
        name = data["name"]
        if name in skills:
            raise ToolInputInvalid(f"{name!r} is a skill, not a tool: load it with {SKILL_TOOL}")
        if name in AUTOMATIC_TOOLS:
            raise ToolInputInvalid(f"call {name} directly, not through {CALL_TOOL}")
        if name in tools:
            # only a caller that bypasses the loop's routing gets here
            raise ToolInputInvalid(
                f"{CALL_TOOL} calls are run by the agent loop as the tool they name; "
                f"call {name} directly"
            )
        raise ToolInputInvalid(
            f"no tool is named {name!r}: find one with {SEARCH_TOOL} (a few words of what it "
            f"should do), then call {CALL_TOOL} with the name it gives"
        )

    return refuse
