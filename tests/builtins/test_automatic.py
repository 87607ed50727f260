"""The automatic built-ins: which a node gets, the skill listing and body, catalog search."""

from __future__ import annotations

import json
from collections.abc import Sequence

from eve.builtins.catalog import SEARCH_MAX_RESULTS, CatalogEntry, search
from eve.builtins.skill import skill_body, skill_declaration
from eve.manifest import AgentConfig, AgentNode, Instructions, SkillEntry, ToolEntry
from eve.runtime.automatic import automatic_entries
from eve.tools import tool
from tests.execution.helpers import live


@tool(deferred=True)
def gift_wrap(order_number: int, paper: str = "kraft") -> str:
    """Gift-wrap a placed order."""
    return "wrapped"


@tool
def get_price(item: str) -> str:
    """Get the price of an item."""
    return "3"


WRAP = live("gift_wrap", gift_wrap).entry
PRICE = live("get_price", get_price).entry
RETURNS = SkillEntry(
    name="returns-policy",
    description="The shop's Returns policy.",
    logical_path="agent/skills/returns-policy.md",
    source_id="skills/returns-policy.md",
)


def node(tools: Sequence[ToolEntry] = (), skills: Sequence[SkillEntry] = ()) -> AgentNode:
    return AgentNode(
        node_id="__root__",
        root="agent",
        config=AgentConfig(),
        instructions=Instructions(logical_path=None, text=""),
        tools=list(tools),
        skills=list(skills),
    )


def names(entries: Sequence[ToolEntry]) -> list[str]:
    return [e.name for e in entries]


def test_a_node_gets_only_the_built_ins_its_contents_call_for() -> None:
    assert automatic_entries(node([PRICE])) == []
    assert names(automatic_entries(node([PRICE], [RETURNS]))) == ["eve__search", "eve__skill"]
    assert names(automatic_entries(node([PRICE, WRAP]))) == ["eve__search", "eve__tool"]
    every = automatic_entries(node([PRICE, WRAP], [RETURNS]))
    assert names(every) == ["eve__search", "eve__skill", "eve__tool"]
    assert all(e.source_id == f"eve:builtins/{e.name}" and e.logical_path == "" for e in every)


def test_the_skill_tool_lists_every_skill_by_name_and_description() -> None:
    other = SkillEntry(
        name="tone", description="How to write.", logical_path="agent/skills/tone.md", source_id=""
    )
    entry = skill_declaration([RETURNS, other])
    assert entry.description.endswith(
        "The skills:\n- returns-policy: The shop's Returns policy.\n- tone: How to write."
    )
    assert entry.input_schema is not None
    assert entry.input_schema["required"] == ["name"]
    assert entry.input_schema["properties"]["name"]["examples"] == ["returns-policy"]


def test_the_search_tool_says_what_the_catalog_holds() -> None:
    [search_entry, _, _] = automatic_entries(node([PRICE, WRAP], [RETURNS]))
    assert search_entry.description.startswith(
        "Search the catalog: 1 tool kept out of your tool list (call with eve__tool) and "
        "1 skill (load with eve__skill)."
    )


def test_skill_body_strips_the_front_matter() -> None:
    text = "---\ndescription: Returns.\n---\n\n# Returns\n\nWithin 30 days.\n"
    assert skill_body(text) == "# Returns\n\nWithin 30 days.\n"
    assert skill_body("\n# No front matter\n") == "# No front matter\n"


CATALOG = [
    CatalogEntry(name="gift_wrap", kind="tool", description="Wrap an order.", input_schema={}),
    CatalogEntry(name="returns-policy", kind="skill", description="The shop's returns policy."),
    CatalogEntry(name="track_parcel", kind="tool", description="Where an order is now."),
]


def found(query: str) -> list[str]:
    return [entry["name"] for entry in json.loads(search(CATALOG, query))]


def test_search_matches_words_of_names_and_descriptions_ignoring_case() -> None:
    assert found("WRAP") == ["gift_wrap"]  # a word of the name
    assert found("gifts") == ["gift_wrap"]  # a plural finds its word
    assert found("Returns") == ["returns-policy"]  # a skill, by its name and description
    assert found("order") == ["gift_wrap", "track_parcel"]  # descriptions, then by name
    assert found("where is my order") == ["track_parcel", "gift_wrap"]  # more words first
    assert found("") == ["gift_wrap", "returns-policy", "track_parcel"]  # everything


def test_search_results_are_compact_and_give_a_tool_its_schema() -> None:
    [tool_hit] = json.loads(search(CATALOG, "wrap"))
    assert tool_hit == {
        "name": "gift_wrap",
        "kind": "tool",
        "description": "Wrap an order.",
        "input_schema": {},
    }
    [skill_hit] = json.loads(search(CATALOG, "policy"))
    assert skill_hit == {
        "name": "returns-policy",
        "kind": "skill",
        "description": "The shop's returns policy.",
    }


def test_a_search_without_matches_says_so_and_what_to_try() -> None:
    assert search(CATALOG, "weather") == (
        "nothing in the catalog matches 'weather' (it holds 2 tools and 1 skill): try other "
        "words, or an empty query to list everything"
    )


def test_a_long_result_is_cut_with_a_note() -> None:
    many = [
        CatalogEntry(name=f"tool_{n:02}", kind="tool", description="Same.")
        for n in range(SEARCH_MAX_RESULTS + 3)
    ]
    text = search(many, "same")
    listed, note = text.split("\n")
    assert len(json.loads(listed)) == SEARCH_MAX_RESULTS
    assert note == "[3 more matched; narrow the query to see them]"
