"""Usage by kind reaches every place a user reads it: the result and the turn's events."""

from __future__ import annotations

import json

import msgspec

from eve._usage import TokenUsage
from eve.events import SessionEvent, StepCompleted, TurnCompleted
from eve.execution import TurnEnvironment, agent_setup, run_agent
from eve.models.events import Done, ModelEvent, TextDelta, ToolCallEnd, ToolCallStart
from eve.models.function import FunctionModel
from eve.tools import tool
from tests.execution.helpers import Script, live

FIRST = TokenUsage(input_tokens=40, output_tokens=5, cache_write_tokens=1200)
SECOND = TokenUsage(input_tokens=30, output_tokens=9, cache_read_tokens=1200, reasoning_tokens=4)


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def step(usage: TokenUsage, *events: ModelEvent) -> list[ModelEvent]:
    return [*events, Done(stop_reason="tool_use" if events else "end_turn", usage=usage)]


async def test_cache_and_reasoning_tokens_are_reported_apart_and_added_up() -> None:
    script = Script(
        step(
            FIRST, ToolCallStart(id="c0", name="ping"), ToolCallEnd(id="c0", name="ping", input={})
        ),
        [TextDelta(text="pong it is"), *step(SECOND)],
    )
    events: list[SessionEvent] = []
    setup = agent_setup(FunctionModel(script), tools=[live("ping", ping)])
    result = await run_agent(setup, "ping?", env=TurnEnvironment(on_event=events.append))
    total = FIRST + SECOND
    assert result.usage == total
    assert (total.cache_read_tokens, total.cache_write_tokens, total.reasoning_tokens) == (
        1200,
        1200,
        4,
    )
    assert total.total_input_tokens == 40 + 30 + 1200 + 1200
    [completed] = [e for e in events if isinstance(e, TurnCompleted)]
    # on the wire (the stream, eve run --json, the HTTP API), each kind under its own name
    wire = json.loads(msgspec.json.encode(completed))["data"]["usage"]
    assert wire == {
        "input_tokens": 70,
        "output_tokens": 14,
        "cache_read_tokens": 1200,
        "cache_write_tokens": 1200,
        "reasoning_tokens": 4,
    }
    steps = [e.data.usage for e in events if isinstance(e, StepCompleted)]
    assert steps == [FIRST, total]  # each step.completed carries the turn's usage so far
