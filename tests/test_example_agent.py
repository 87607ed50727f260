"""The example agent this repo ships: fresh artifacts, and the counter lesson from DESIGN.md."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from eve.artifacts import check_artifacts
from eve.authoring.context import ToolContext
from eve.context import EveContext, use_context
from eve.execution import load_transcript
from eve.manifest import ProviderToolEntry
from eve.messages import AssistantMessage, ToolResultMessage
from eve.runtime import ResolvedAgent, load_compiled_agent, resolve_agent
from eve.runtime.resolved import ResolvedFunctionTool
from tests.cli.test_run_cli import eve_run
from tests.conftest import REPO_ROOT
from tests.sessions.harness import Event, count, script
from tests.sessions.inprocess import InProcessServer

#: the example agent's units server forked from the fork server, not started anew
#: (``forked_stdio_scripts``)
pytestmark = pytest.mark.usefixtures("forked_stdio_scripts")


async def example_agent() -> ResolvedAgent:
    loaded = load_compiled_agent(REPO_ROOT)
    return await resolve_agent(loaded.manifest, loaded.module_map)


def call(agent: ResolvedAgent, name: str, data: dict[str, Any], session: str) -> Any:
    tool = agent.tool(name)
    assert isinstance(tool, ResolvedFunctionTool)
    return tool.execute(
        tool.validator.validate(data), ToolContext(session_id=session, call_id="c", tool_name=name)
    )


def test_committed_artifacts_are_fresh() -> None:
    report = check_artifacts(REPO_ROOT)
    assert report.fresh, report


async def test_example_has_every_required_part() -> None:
    loaded = load_compiled_agent(REPO_ROOT)
    root = loaded.manifest.nodes["__root__"]
    kinds = {t.name: t.handling for t in root.tools}
    assert kinds["web_search"] == "provider-tool"
    assert [s.name for s in root.skills] == ["returns-policy"]
    deferred = [t.name for t in root.tools if not isinstance(t, ProviderToolEntry) and t.deferred]
    assert deferred == ["gift_wrap"]
    assert root.subagents == ["researcher", "triage"]
    bindings = root.bindings
    assert (
        bindings["lib/catalog.py"].usage.compile,
        bindings["lib/catalog.py"].usage.runtime_entry,
    ) == (False, True)
    researcher = await resolve_agent(loaded.manifest, loaded.module_map, "researcher")
    # the typed subagent's answer class is re-attached from its agent.py, a runtime root
    triage = await resolve_agent(loaded.manifest, loaded.module_map, "triage")
    assert triage.output is not None and triage.output.model is not None
    assert triage.output.model.__qualname__ == "Triage"
    assert loaded.manifest.nodes["triage"].bindings["agent.py"].usage.runtime_entry
    agent = await example_agent()
    assert call(agent, "get_price", {"item": "hammer"}, "s") == {
        "item": "hammer",
        "price": 12.5,
        "currency": "EUR",
    }
    assert call(researcher, "get_price", {"item": "hammer"}, "s")["price"] == 11.25
    # its skill and its deferred tool bring the built-ins that reach them; the researcher has
    # no skill, and the deferred gift_wrap it inherits brings the catalog but no eve__skill
    assert [t.name for t in agent.tools][-3:] == ["eve__search", "eve__skill", "eve__tool"]
    assert [t.name for t in researcher.tools if t.name.startswith("eve__")] == [
        "eve__search",
        "eve__tool",
    ]


async def test_module_counter_leaks_across_sessions_but_state_does_not() -> None:
    agent = await example_agent()
    first, second = EveContext(session_id="first"), EveContext(session_id="second")
    with use_context(first):
        for _ in range(2):
            call(agent, "count_visits", {}, "first")
            call(agent, "count_session_visits", {}, "first")
    with use_context(second):
        leaked = call(agent, "count_visits", {}, "second")
        kept = call(agent, "count_session_visits", {}, "second")
    assert leaked == {"count": 3}  # the second session's first call sees the first's calls
    assert kept == {"count": 1}


def shop_copy(tmp_path: Path) -> Path:
    """A copy of the example agent and its artifacts, to run without touching the repo."""
    root = tmp_path / "shop"
    shutil.copytree(REPO_ROOT / "agent", root / "agent")
    shutil.copytree(REPO_ROOT / ".eve", root / ".eve", ignore=shutil.ignore_patterns("sessions"))
    return root


def test_over_http_the_module_counter_leaks_and_the_state_counter_does_not(
    tmp_path: Path,
) -> None:
    """DESIGN.md's lesson, through the durable API: two sessions, two counters."""
    root = shop_copy(tmp_path)
    both = {"tool_calls": [{"name": "count_visits"}, {"name": "count_session_visits"}]}
    script(root, [both, {"text": "counted"}])
    server = InProcessServer(root, model="offline/script:script.json").start()
    try:
        outputs = []
        for _ in range(2):
            session = server.create("count")
            events = server.wait_for(session, count("session.waiting"))
            # by tool: the step's two calls run in parallel, and each result is published
            # as it comes (the model still reads them in its own order)
            results = [e["data"] for e in events if e["type"] == "action.result"]
            outputs.append({r["name"]: r["output"] for r in results})
    finally:
        server.stop()
    assert outputs[0] == {"count_visits": '{"count":1}', "count_session_visits": '{"count":1}'}
    # the second session sees the first one's module-level visits, but its own state
    assert outputs[1] == {"count_visits": '{"count":2}', "count_session_visits": '{"count":1}'}


#: the model loads the returns policy, finds gift wrapping in the catalog and calls it
CATALOG_SCRIPT = [
    {
        "tool_calls": [
            {"name": "eve__skill", "input": {"name": "returns-policy"}},
            {"name": "eve__search", "input": {"query": "gift wrapping"}},
        ]
    },
    {
        "tool_calls": [
            {"name": "eve__tool", "input": {"name": "gift_wrap", "input": {"order_number": 1}}}
        ]
    },
    {"text": "Wrapped; returns within 30 days."},
]


def check_catalog_turn(events: list[Event]) -> None:
    """What the catalog script's turn shows, through either door."""
    kinds = [e["type"] for e in events]
    assert "turn.completed" in kinds, [e["data"] for e in events if e["type"] == "turn.failed"]
    [loaded] = [e["data"] for e in events if e["type"] == "skill.loaded"]
    assert loaded["name"] == "returns-policy"
    results = {e["data"]["name"]: e["data"] for e in events if e["type"] == "action.result"}
    assert "Items can be returned within 30 days" in results["eve__skill"]["output"]
    assert "description:" not in results["eve__skill"]["output"]  # front matter stripped
    [found] = json.loads(results["eve__search"]["output"])
    assert (found["name"], found["kind"]) == ("gift_wrap", "tool")
    assert json.loads(results["gift_wrap"]["output"])["paper"] == "kraft"
    assert "eve__tool" not in results  # the catalog call is reported as the tool it named
    [_, wrap] = [e["data"]["actions"] for e in events if e["type"] == "actions.requested"]
    assert wrap == [
        {
            "call_id": "call_1_0",
            "name": "gift_wrap",
            "input": {"order_number": 1},
            "via": "eve__tool",
        }
    ]


def test_eve_run_loads_the_skill_and_reaches_the_deferred_tool(tmp_path: Path) -> None:
    root = shop_copy(tmp_path)
    script(root, CATALOG_SCRIPT)
    model = "offline/script:script.json"
    done = eve_run(root, "Wrap order 1", "--model", model, "--json", "--session", "s.jsonl")
    assert done.returncode == 0, done.stderr
    check_catalog_turn([json.loads(line) for line in done.stdout.splitlines()])
    transcript = load_transcript(root / "s.jsonl")
    calls = [c.name for m in transcript if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert calls == ["eve__skill", "eve__search", "eve__tool"]  # as the model made them
    names = [m.name for m in transcript if isinstance(m, ToolResultMessage)]
    assert names == ["eve__skill", "eve__search", "gift_wrap"]  # as they ran


def test_over_http_the_skill_loads_and_the_deferred_tool_is_reached(tmp_path: Path) -> None:
    root = shop_copy(tmp_path)
    script(root, CATALOG_SCRIPT)
    server = InProcessServer(root, model="offline/script:script.json").start()
    try:
        session = server.create("Wrap order 1; can I return it?")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    check_catalog_turn(events)


def test_the_example_hook_counts_turns_of_one_http_session(tmp_path: Path) -> None:
    """hooks/turn_counter.py keeps its counts in session state, across turns."""
    root = tmp_path / "shop"
    shutil.copytree(REPO_ROOT / "agent", root / "agent")
    shutil.copytree(REPO_ROOT / ".eve", root / ".eve", ignore=shutil.ignore_patterns("sessions"))
    ask = {"tool_calls": [{"name": "session_turns"}]}
    script(root, [ask, {"text": "one"}, ask, {"text": "two"}])
    server = InProcessServer(root, model="offline/script:script.json").start()
    try:
        session = server.create("how many turns?")
        server.wait_for(session, count("session.waiting"))
        server.send(session, "and now?")
        events = server.wait_for(session, count("session.waiting", 2))
    finally:
        server.stop()
    outputs = [e["data"]["output"] for e in events if e["type"] == "action.result"]
    assert outputs == ['{"started":1,"completed":0}', '{"started":2,"completed":1}']
    assert "hook.failed" not in [e["type"] for e in events]


def test_the_example_hook_runs_under_eve_run(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    shutil.copytree(REPO_ROOT / "agent", root / "agent")
    shutil.copytree(REPO_ROOT / ".eve", root / ".eve", ignore=shutil.ignore_patterns("sessions"))
    script(root, [{"tool_calls": [{"name": "session_turns"}]}, {"text": "one"}])
    done = eve_run(root, "how many turns?", "--json", "--model", "offline/script:script.json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    outputs = [e["data"]["output"] for e in events if e["type"] == "action.result"]
    assert outputs == ['{"started":1,"completed":0}']


#: the shop assistant delegates price history to the researcher (which runs its own get_price)
#: and confirms a delivery slot with the customer through the confirm_delivery workflow tool
COMPOSITION_SCRIPT = {
    "__root__": [
        {
            "tool_calls": [
                {"name": "researcher", "input": {"message": "How did the hammer's price change?"}},
                {"name": "confirm_delivery", "input": {"slot": "Friday morning"}},
            ]
        },
        {"text": "The hammer was cheaper a year ago; delivery on Friday morning is confirmed."},
    ],
    "researcher": [
        {"tool_calls": [{"name": "get_price", "input": {"item": "hammer", "months_ago": 12}}]},
        {"text": "A year ago the hammer cost 11.25 EUR."},
    ],
}


def composition_copy(tmp_path: Path) -> Path:
    root = shop_copy(tmp_path)
    (root / "script.json").write_text(json.dumps(COMPOSITION_SCRIPT))
    return root


def check_composition_turn(events: list[Event]) -> None:
    """What the composition script's turn shows, through either door."""
    mine = [e for e in events if "parent" not in e["data"]]
    delegated = [e for e in events if "parent" in e["data"]]
    assert "turn.completed" in [e["type"] for e in mine]
    tasks = {e["data"]["name"]: e["data"] for e in mine if e["type"] == "task.started"}
    assert {n: t["kind"] for n, t in tasks.items()} == {
        "researcher": "subagent",
        "confirm_delivery": "workflow-tool",
    }
    results = {e["data"]["name"]: e["data"] for e in mine if e["type"] == "action.result"}
    assert results["researcher"]["output"] == "A year ago the hammer cost 11.25 EUR."
    assert json.loads(results["confirm_delivery"]["output"]) == {
        "slot": "Friday morning",
        "confirmed": True,
    }
    # the researcher's session: its own get_price (11.25, not the root's 12.5), linked
    [price] = [e["data"] for e in delegated if e["type"] == "action.result"]
    assert json.loads(price["output"])["price"] == 11.25
    assert {e["data"]["parent"]["call_id"] for e in delegated} == {tasks["researcher"]["call_id"]}
    assert {e["data"]["node_id"] for e in delegated} == {"researcher"}
    [question] = [
        r for e in events if e["type"] == "input.requested" for r in e["data"]["requests"]
    ]
    assert question["question"] == "Can the order arrive Friday morning?"


async def test_the_researcher_is_offered_as_a_tool_and_lacks_what_subagents_may_not_use() -> None:
    loaded = load_compiled_agent(REPO_ROOT)
    agent = await example_agent()
    researcher = await resolve_agent(loaded.manifest, loaded.module_map, "researcher")
    # the typed subagent's answer class is re-attached from its agent.py, a runtime root
    triage = await resolve_agent(loaded.manifest, loaded.module_map, "triage")
    assert triage.output is not None and triage.output.model is not None
    assert triage.output.model.__qualname__ == "Triage"
    assert loaded.manifest.nodes["triage"].bindings["agent.py"].usage.runtime_entry
    offered = agent.tool("researcher")
    assert offered is not None and offered.entry.handling == "subagent"
    assert offered.description.startswith("Researches how an item's price changed")
    names = {t.name for t in researcher.tools}
    # place_order and confirm_delivery say available_in_subagents=False
    assert {"get_price", "convert_currency", "gift_wrap"} <= names
    assert not names & {"place_order", "confirm_delivery", "researcher"}


def test_eve_run_delegates_to_the_researcher_and_asks_the_customer(tmp_path: Path) -> None:
    root = composition_copy(tmp_path)
    model = "offline/script:script.json"
    done = eve_run(
        root, "Hammer history; deliver Friday?", "--model", model, "--json", answers="yes\n"
    )
    assert done.returncode == 0, done.stderr
    check_composition_turn([json.loads(line) for line in done.stdout.splitlines()])


def test_eve_run_without_anyone_to_answer_fails_only_the_question(tmp_path: Path) -> None:
    root = composition_copy(tmp_path)
    done = eve_run(root, "deliver Friday?", "--model", "offline/script:script.json", answers="")
    assert done.returncode == 0, done.stderr
    assert "no answer on standard input" in done.stderr
    assert "✗ confirm_delivery: NoOneToAsk:" in done.stderr
    assert "delivery on Friday morning is confirmed" in done.stdout  # the script goes on


def test_over_http_the_researcher_runs_and_the_customer_answers(tmp_path: Path) -> None:
    root = composition_copy(tmp_path)
    server = InProcessServer(root, model="offline/script:script.json").start()
    try:
        session = server.create("Hammer history; deliver Friday?")
        parked = server.wait_for(session, count("turn.waiting"))
        [[request]] = [e["data"]["requests"] for e in parked if e["type"] == "input.requested"]
        server.answer(session, request["request_id"], "yes")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    check_composition_turn(events)
