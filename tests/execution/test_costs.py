"""Costs in the loop: each step's and the turn's, in the events and RunResult, and a
subagent's counted toward its caller's (through the real Anthropic SDK on loopback)."""

from __future__ import annotations

import json
from decimal import Decimal

import msgspec
import pytest

from eve._usage import TokenUsage
from eve.cli.agent_setup import prepare
from eve.costs import Cost, Spend
from eve.events import SessionEvent, StepCompleted, TaskSettled, TurnCompleted
from eve.execution import TurnEnvironment, agent_setup, run_agent
from eve.execution.inline_tasks import InlineTasks
from eve.models.events import Done, TextDelta, ToolCallEnd, ToolCallStart
from eve.models.function import FunctionModel
from eve.tools import tool
from tests.conftest import AppFactory
from tests.execution.helpers import Script, live
from tests.execution.test_tasks import tree, write
from tests.models.anthropic_script import end, text_block
from tests.models.sse_server import ScriptedServer, anthropic_sse

SONNET = "anthropic/claude-sonnet-4-5"
FIRST = TokenUsage(input_tokens=1000, output_tokens=100, cache_write_tokens=2000)
SECOND = TokenUsage(input_tokens=500, output_tokens=200, cache_read_tokens=2000)


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def two_steps() -> Script:
    call = [ToolCallStart(id="c0", name="ping"), ToolCallEnd(id="c0", name="ping", input={})]
    return Script(
        [*call, Done(stop_reason="tool_use", usage=FIRST)],
        [TextDelta(text="pong it is"), Done(stop_reason="end_turn", usage=SECOND)],
    )


async def test_each_step_and_the_turn_are_priced_cache_tokens_at_cache_prices() -> None:
    events: list[SessionEvent] = []
    setup = agent_setup(FunctionModel(two_steps(), model_id=SONNET), tools=[live("ping", ping)])
    before = Spend(usage=TokenUsage(input_tokens=7), cost=Cost(usd=Decimal("1")))
    env = TurnEnvironment(on_event=events.append, spent_before=before)
    result = await run_agent(setup, "ping?", env=env)
    # $3 input, $3.75 cache write, $0.30 cache read, $15 output per million tokens
    first = Decimal("0.003") + Decimal("0.0075") + Decimal("0.0015")
    second = Decimal("0.0015") + Decimal("0.0006") + Decimal("0.003")
    assert result.cost == Cost(usd=first + second)
    assert result.session == Spend(
        usage=before.usage + result.usage, cost=Cost(usd=1 + first + second)
    )
    steps = [e.data for e in events if isinstance(e, StepCompleted)]
    assert [s.step for s in steps] == [
        Spend(usage=FIRST, cost=Cost(usd=first)),
        Spend(usage=SECOND, cost=Cost(usd=second)),
    ]
    assert [s.cost for s in steps] == [Cost(usd=first), Cost(usd=first + second)]
    [completed] = [e for e in events if isinstance(e, TurnCompleted)]
    assert completed.data.cost == result.cost and completed.data.session == result.session
    wire = json.loads(msgspec.json.encode(completed))["data"]
    assert wire["cost"] == {"usd": str(first + second)}  # an exact decimal string
    assert wire["session"]["cost"] == {"usd": str(1 + first + second)}


async def test_an_unknown_model_is_price_unknown_in_every_total() -> None:
    events: list[SessionEvent] = []
    model = FunctionModel(two_steps(), model_id="acme/large")
    setup = agent_setup(model, tools=[live("ping", ping)])
    result = await run_agent(setup, "ping?", env=TurnEnvironment(on_event=events.append))
    assert result.cost == Cost(unpriced=["acme/large"]) and result.cost.usd is None
    assert result.usage == FIRST + SECOND  # the tokens are still counted
    [completed] = [e for e in events if isinstance(e, TurnCompleted)]
    wire = json.loads(msgspec.json.encode(completed))["data"]
    assert wire["cost"] == {"unpriced": ["acme/large"]}  # no "usd": unknown, not 0


CHILD = TokenUsage(input_tokens=300, output_tokens=40, cache_read_tokens=1000)


def child_reply() -> list[dict[str, object]]:
    usage = {"input_tokens": 300, "output_tokens": 1, "cache_read_input_tokens": 1000}
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        },
    }
    return [start, *text_block(0, "helped"), *end("end_turn", 40)]


async def test_a_subagents_tokens_and_cost_count_toward_its_caller(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(make_app, runtime=True)
    write(
        root,
        "script.json",
        [
            {"tool_calls": [{"name": "configure", "input": {"model": SONNET}}]},
            {"tool_calls": [{"name": "helper", "input": {"message": "look it up"}}]},
            {"text": "ok"},
        ],
    )
    write(root, "compiled.json", [])
    with ScriptedServer() as server:
        server.add(anthropic_sse(child_reply()))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-SECRET-1234567890")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        setup = await prepare(root, model=None, max_turns=None)
        events: list[SessionEvent] = []
        env = TurnEnvironment(on_event=events.append, tasks=InlineTasks(setup=setup))
        result = await run_agent(setup, "go", env=env)
    assert result.final_text == "ok"
    # $3 input, $0.30 cache read, $15 output per million; the caller's offline model is free
    child_cost = Cost(usd=Decimal("0.0009") + Decimal("0.0003") + Decimal("0.0006"))
    [settled] = [e.data for e in events if isinstance(e, TaskSettled)]
    assert settled.spend == Spend(usage=CHILD, cost=child_cost)
    [child_turn, caller_turn] = [e.data for e in events if isinstance(e, TurnCompleted)]
    assert child_turn.parent is not None and caller_turn.parent is None
    assert child_turn.cost == child_cost
    assert result.cost == child_cost and caller_turn.cost == child_cost
    assert result.usage.cache_read_tokens == 1000 and result.usage.output_tokens >= 40
    caller_steps = [e.data for e in events if isinstance(e, StepCompleted) and not e.data.parent]
    assert caller_steps[1].step is not None and caller_steps[1].step.cost == child_cost
