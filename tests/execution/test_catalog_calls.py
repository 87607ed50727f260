"""Skills and the catalog in the loop: listing, loading, searching, and catalog calls that
are reported, approved and traced as the tool they name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from eve.authoring.context import ToolContext
from eve.events import SessionEvent
from eve.execution.result import RunResult
from eve.execution.tool_calls import ApprovalRequest
from eve.manifest import AgentConfig, AgentNode, Instructions, SkillEntry
from eve.messages import ToolCall, ToolResultMessage, assistant_message, tool_result
from eve.models.function import FunctionModel
from eve.runtime.automatic import bind_automatic
from eve.runtime.resolved import ResolvedTool
from eve.tools import tool
from eve.tools.approval import always, once
from tests.execution.helpers import Script, calls, live, text, turn
from tests.execution.test_checkpoints import JsonRecorder

SKILL_FILE = "---\ndescription: The returns policy.\n---\n# Returns\n\nWithin 30 days.\n"
seen_names: list[str] = []


@tool
def get_price(item: str) -> str:
    """Get the price of an item."""
    return "3 EUR"


@tool(deferred=True)
def gift_wrap(order_number: int, ctx: ToolContext, paper: str = "kraft") -> str:
    """Gift-wrap a placed order."""
    seen_names.append(ctx.tool_name)
    return f"wrapped order {order_number} in {paper}"


@tool(deferred=True, approval=always())
def refund(order_number: int) -> str:
    """Refund an order (a person approves every refund)."""
    return f"refunded {order_number}"


@tool(deferred=True, approval=once())
def discount(percent: int) -> str:
    """Give a discount."""
    return f"{percent}% off"


def agent_tools(root: Path, *tools: ResolvedTool, skills: bool = True) -> list[ResolvedTool]:
    """The tools with the automatic built-ins a node of them (and one skill) gets."""
    skill = SkillEntry(
        name="returns-policy",
        description="The returns policy.",
        logical_path="agent/skills/returns-policy.md",
        source_id="skills/returns-policy.md",
    )
    (root / "agent/skills").mkdir(parents=True, exist_ok=True)
    (root / skill.logical_path).write_text(SKILL_FILE, encoding="utf-8")
    node = AgentNode(
        node_id="__root__",
        root="agent",
        config=AgentConfig(),
        instructions=Instructions(logical_path=None, text=""),
        tools=[t.entry for t in tools],
        skills=[skill] if skills else [],
    )
    return [*tools, *bind_automatic(node, root)]


PRICE = live("get_price", get_price)
WRAP = live("gift_wrap", gift_wrap)
REFUND = live("refund", refund)
DISCOUNT = live("discount", discount)


async def run(
    script: Script, tools: list[ResolvedTool], **kwargs: Any
) -> tuple[RunResult, list[SessionEvent], FunctionModel]:
    events: list[SessionEvent] = []
    model = FunctionModel(script)
    result = await turn(
        client=model,
        system="Be brief.",
        tools=tools,
        user_message="hi",
        on_event=events.append,
        **kwargs,
    )
    return result, events, model


def results(result: RunResult) -> list[ToolResultMessage]:
    return [m for m in result.messages if isinstance(m, ToolResultMessage)]


def of_type(events: list[SessionEvent], type_: str) -> list[dict[str, Any]]:
    """The data of the events of ``type_``, as plain data (the shape the wire has)."""
    return [msgspec.to_builtins(e.data) for e in events if e.type == type_]


async def test_the_model_sees_skills_in_the_skill_tool_and_no_deferred_tool(
    tmp_path: Path,
) -> None:
    _, _, model = await run(Script(text("ok")), agent_tools(tmp_path, PRICE, WRAP))
    [request] = model.requests
    assert request.system == "Be brief."  # the listing travels with the tools, not the prompt
    offered = {t.name: t for t in request.tools}
    assert list(offered) == ["get_price", "eve__search", "eve__skill", "eve__tool"]
    assert offered["eve__skill"].description.endswith(
        "The skills:\n- returns-policy: The returns policy."
    )


async def test_loading_a_skill_returns_its_body_and_reports_a_skill_load(tmp_path: Path) -> None:
    script = Script(calls(("eve__skill", {"name": "returns-policy"})), text("30 days"))
    result, events, _ = await run(script, agent_tools(tmp_path, PRICE))
    [body] = results(result)
    assert (body.content, body.is_error, body.name) == (
        "# Returns\n\nWithin 30 days.\n",
        False,
        "eve__skill",
    )
    types = [e.type for e in events]
    assert types[types.index("actions.requested") :][:3] == [
        "actions.requested",
        "skill.loaded",
        "action.result",
    ]
    [loaded] = of_type(events, "skill.loaded")
    assert (loaded["name"], loaded["call_id"], loaded["step_index"]) == ("returns-policy", "c0", 0)


async def test_the_body_is_read_when_the_skill_is_loaded(tmp_path: Path) -> None:
    tools = agent_tools(tmp_path, PRICE)
    skill_file = tmp_path / "agent/skills/returns-policy.md"
    skill_file.write_text("---\ndescription: Changed.\n---\nNow 60 days.\n", encoding="utf-8")
    script = Script(calls(("eve__skill", {"name": "returns-policy"})), text("60 days"))
    result, _, _ = await run(script, tools)
    assert results(result)[0].content == "Now 60 days.\n"


async def test_an_unknown_skill_is_an_error_result_naming_the_skills(tmp_path: Path) -> None:
    script = Script(calls(("eve__skill", {"name": "shipping"})), text("sorry"))
    result, events, _ = await run(script, agent_tools(tmp_path, PRICE))
    [error] = results(result)
    assert error.is_error
    assert error.content == (
        "ToolInputInvalid: there is no skill named 'shipping'; the skills are: returns-policy"
    )
    assert of_type(events, "skill.loaded") == []
    assert result.stop_reason == "complete"


async def test_search_finds_deferred_tools_with_their_schema_and_skills(tmp_path: Path) -> None:
    script = Script(
        calls(("eve__search", {"query": "WRAP"}), ("eve__search", {"query": "returns"})),
        text("found"),
    )
    result, _, _ = await run(script, agent_tools(tmp_path, PRICE, WRAP))
    wrap, returns = (json.loads(r.content) for r in results(result))
    assert [(e["name"], e["kind"]) for e in wrap] == [("gift_wrap", "tool")]
    assert set(wrap[0]["input_schema"]["properties"]) == {"order_number", "paper"}
    assert returns == [
        {"name": "returns-policy", "kind": "skill", "description": "The returns policy."}
    ]


async def test_a_catalog_call_runs_and_is_reported_as_the_entry(tmp_path: Path) -> None:
    seen_names.clear()
    call = {"name": "gift_wrap", "input": {"order_number": 7, "paper": "red"}}
    script = Script(calls(("eve__tool", call)), text("wrapped"))
    result, events, model = await run(script, agent_tools(tmp_path, PRICE, WRAP))
    assert "gift_wrap" not in [t.name for t in model.requests[0].tools]
    # the history keeps the model's own call, and the result answers its id
    assert result.messages[1] == assistant_message(
        tool_calls=[ToolCall(id="c0", name="eve__tool", input=call)]
    )
    assert results(result) == [tool_result("c0", "wrapped order 7 in red", name="gift_wrap")]
    [requested] = of_type(events, "actions.requested")
    assert requested["actions"] == [
        {
            "call_id": "c0",
            "name": "gift_wrap",
            "input": {"order_number": 7, "paper": "red"},
            "via": "eve__tool",
        }
    ]
    [done] = of_type(events, "action.result")
    assert (done["call_id"], done["name"], done["status"]) == ("c0", "gift_wrap", "completed")
    assert seen_names == ["gift_wrap"]  # ToolContext.tool_name


async def test_a_catalog_call_with_bad_input_fails_as_the_entry(tmp_path: Path) -> None:
    script = Script(calls(("eve__tool", {"name": "gift_wrap", "input": {}})), text("oops"))
    result, events, _ = await run(script, agent_tools(tmp_path, WRAP))
    [error] = results(result)
    assert (error.name, error.is_error) == ("gift_wrap", True)
    assert error.content == "invalid input: order_number: Field required"
    assert of_type(events, "action.result")[0]["name"] == "gift_wrap"


async def test_an_approval_gated_catalog_call_asks_about_the_entry(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return request.input["order_number"] == 1

    script = Script(
        calls(
            ("eve__tool", {"name": "refund", "input": {"order_number": 1}}),
            ("eve__tool", {"name": "refund", "input": {"order_number": 2}}),
        ),
        text("done"),
    )
    result, events, _ = await run(script, agent_tools(tmp_path, REFUND), approve=approve)
    assert [(r.tool_name, r.call_id, r.input, r.rule) for r in asked] == [
        ("refund", "c0", {"order_number": 1}, "always"),
        ("refund", "c1", {"order_number": 2}, "always"),
    ]
    first, second = results(result)
    assert (first.content, first.name) == ("refunded 1", "refund")
    assert second.content == "refund needs approval and a person denied this call"
    statuses = [(e["name"], e["status"]) for e in of_type(events, "action.result")]
    assert statuses == [("refund", "completed"), ("refund", "rejected")]


async def test_once_remembers_the_entry_not_eve_tool(tmp_path: Path) -> None:
    approved_once: set[str] = set()
    script = Script(
        calls(
            ("eve__tool", {"name": "discount", "input": {"percent": 5}}),
            ("discount", {"percent": 10}),  # called directly, it is still the same tool
        ),
        text("done"),
    )
    asked: list[str] = []
    result, _, _ = await run(
        script,
        agent_tools(tmp_path, DISCOUNT),
        approve=lambda request: asked.append(request.tool_name) or True,
        approved_once=approved_once,
    )
    # the turn's final state holds the session's once() approvals (its checkpoint keeps them)
    assert result.state is not None
    assert asked == ["discount"] and result.state.approved_once == {"discount"}
    assert [r.content for r in results(result)] == ["5% off", "10% off"]


async def test_an_unknown_catalog_name_says_how_to_search(tmp_path: Path) -> None:
    script = Script(
        calls(
            ("eve__tool", {"name": "teleport", "input": {}}),
            ("eve__tool", {"name": "returns-policy"}),
            ("eve__tool", {"name": "eve__search", "input": {"query": "x"}}),
        ),
        text("sorry"),
    )
    result, events, _ = await run(script, agent_tools(tmp_path, WRAP))
    unknown, skill, builtin = results(result)
    assert all(r.is_error and r.name == "eve__tool" for r in (unknown, skill, builtin))
    assert unknown.content == (
        "ToolInputInvalid: no tool is named 'teleport': find one with eve__search (a few words "
        "of what it should do), then call eve__tool with the name it gives"
    )
    assert skill.content.endswith(
        "'returns-policy' is a skill, not a tool: load it with eve__skill"
    )
    assert builtin.content.endswith("call eve__search directly, not through eve__tool")
    names = [a["name"] for a in of_type(events, "actions.requested")[0]["actions"]]
    assert names == ["eve__tool"] * 3


async def test_a_malformed_catalog_call_fails_eve_tool_validation(tmp_path: Path) -> None:
    script = Script(calls(("eve__tool", {"name": 3, "input": {}})), text("sorry"))
    result, _, _ = await run(script, agent_tools(tmp_path, WRAP))
    [error] = results(result)
    assert (error.name, error.is_error) == ("eve__tool", True)
    assert error.content.startswith("invalid input: name: 3 is not of type 'string'")


async def test_without_skills_or_deferred_tools_nothing_is_added(tmp_path: Path) -> None:
    tools = agent_tools(tmp_path, PRICE, skills=False)
    assert [t.name for t in tools] == ["get_price"]


async def test_a_replayed_catalog_call_is_the_entry_again_and_runs_once(tmp_path: Path) -> None:
    runs: list[str] = []

    @tool(deferred=True, approval=always())
    def ship(item: str) -> str:
        """Ship an item."""
        runs.append(item)
        return f"shipped {item}"

    tools = agent_tools(tmp_path, live("ship", ship), skills=False)
    asked: list[str] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request.tool_name)
        return True

    def responses() -> Script:
        return Script(
            calls(("eve__tool", {"name": "ship", "input": {"item": "anvil"}})), text("ok")
        )

    log = JsonRecorder()
    first, _, _ = await run(responses(), tools, approve=approve, recorder=log)
    assert log.produced == ["step:0", "step:0:answered:0", "step:1"]
    again = JsonRecorder(dict(log.log))
    replayed, _, _ = await run(responses(), tools, approve=approve, recorder=again)
    assert again.produced == [] and runs == ["anvil"]
    assert asked == ["ship", "ship"]  # a durable approval hook answers the replay from its record
    assert replayed.messages == first.messages
    assert results(replayed)[0].name == "ship"
