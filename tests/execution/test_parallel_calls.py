"""The calls of one step run concurrently: results in the model's order, opt-out per tool and
per agent, each call of a batch its own record, and a step's approvals asked in one round."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import msgspec
import pytest
from pydantic import BaseModel

from eve.events import SessionEvent
from eve.execution import TurnEnvironment, agent_setup, run_agent
from eve.execution.recording import Produce, RecordKind, T
from eve.execution.result import RunResult
from eve.execution.tool_calls import ApprovalRequest
from eve.messages import ToolResultMessage
from eve.models.function import FunctionModel
from eve.runtime.resolved import ResolvedTool
from eve.tools import define_tool
from eve.tools.approval import always
from tests.execution.helpers import Script, calls, live, text
from tests.execution.test_checkpoints import JsonRecorder


class Item(BaseModel):
    item: str


@dataclass
class Overlap:
    """How many calls run at once, and the most seen."""

    now: int = 0
    most: int = 0
    alone: list[str] = field(default_factory=list)

    async def run(self, item: str) -> str:
        self.now += 1
        self.most = max(self.most, self.now)
        if self.now == 1:
            self.alone.append(item)
        for _ in range(3):  # give the other calls of the step their turn
            await asyncio.sleep(0)
        self.now -= 1
        return f"did {item}"


def overlapping(overlap: Overlap, name: str = "work", *, parallel: bool = True) -> ResolvedTool:
    async def execute(data: Item, ctx: Any) -> str:
        return await overlap.run(data.item)

    definition = define_tool(
        description="W.", input_schema=Item, execute=execute, parallel=parallel
    )
    return live(name, definition)


async def _turn(
    script: Script,
    tools: Sequence[ResolvedTool],
    *,
    parallel_tools: bool = True,
    **env: Any,
) -> tuple[RunResult, list[SessionEvent]]:
    events: list[SessionEvent] = []
    setup = agent_setup(FunctionModel(script), instructions="s", tools=tools)
    config = msgspec.structs.replace(setup.agent.config, parallel_tools=parallel_tools)
    setup = replace(setup, agent=replace(setup.agent, config=config))
    environment = TurnEnvironment(on_event=events.append, **env)
    return await run_agent(setup, "go", env=environment), events


def _results(result: RunResult) -> list[str]:
    return [m.content for m in result.messages if isinstance(m, ToolResultMessage)]


def _three(name: str = "work") -> Script:
    made = calls((name, {"item": "a"}), (name, {"item": "b"}), (name, {"item": "c"}))
    return Script(made, text("done"))


async def test_the_calls_of_a_step_run_at_once_and_keep_the_models_order() -> None:
    release = asyncio.Event()
    finished: list[str] = []

    async def execute(data: Item, ctx: Any) -> str:
        # "a" waits for "b": with one call at a time the turn would never end
        if data.item == "a":
            await asyncio.wait_for(release.wait(), timeout=5)
        else:
            release.set()
        finished.append(data.item)
        return f"did {data.item}"

    tool = live("work", define_tool(description="W.", input_schema=Item, execute=execute))
    script = Script(calls(("work", {"item": "a"}), ("work", {"item": "b"})), text("done"))
    result, events = await _turn(script, [tool])
    assert finished == ["b", "a"]
    assert _results(result) == ["did a", "did b"]  # the model's order, not the finishing one
    announced = [e.data.call_id for e in events if e.type == "action.result"]  # type: ignore[attr-defined]
    assert sorted(announced) == ["c0", "c1"] and result.stop_reason == "complete"


async def test_a_tool_marked_parallel_false_runs_alone() -> None:
    overlap = Overlap()
    tools = [overlapping(overlap), overlapping(overlap, "solo", parallel=False)]
    script = Script(
        calls(("work", {"item": "a"}), ("solo", {"item": "s"}), ("work", {"item": "b"})),
        text("done"),
    )
    result, _ = await _turn(script, tools)
    assert "s" in overlap.alone and overlap.most == 1  # a, then s alone, then b
    assert _results(result) == ["did a", "did s", "did b"]

    overlap = Overlap()
    result, _ = await _turn(_three(), [overlapping(overlap)])
    assert overlap.most == 3 and _results(result) == ["did a", "did b", "did c"]


async def test_an_agent_with_parallel_tools_off_runs_its_calls_one_at_a_time() -> None:
    overlap = Overlap()
    recorder = JsonRecorder()
    result, _ = await _turn(
        _three(), [overlapping(overlap)], parallel_tools=False, recorder=recorder
    )
    assert overlap.most == 1 and _results(result) == ["did a", "did b", "did c"]
    assert recorder.produced == ["step:0", "step:1"]  # one record a step, as before batches


class CrashOn(JsonRecorder):
    """Dies (as a process would) after the call recorded as ``key`` ran, before its record
    is kept."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key

    async def record(self, key: str, produce: Produce[T], kind: RecordKind[T]) -> T:
        if key == self.key:
            await produce()
            raise RuntimeError("process died")
        return await super().record(key, produce, kind)


async def test_a_crash_in_a_batch_runs_again_only_the_calls_that_did_not_finish() -> None:
    runs: list[str] = []
    others = asyncio.Event()

    async def execute(data: Item, ctx: Any) -> str:
        runs.append(data.item)
        if data.item == "b" and len(runs) < 3:
            await asyncio.wait_for(others.wait(), timeout=5)  # "a" and "c" finish first
        if len(runs) == 3:
            others.set()
        return f"did {data.item}"

    tool = live("work", define_tool(description="W.", input_schema=Item, execute=execute))
    crashed = CrashOn("step:0:call:1")
    with pytest.raises(RuntimeError, match="process died"):
        await _turn(_three(), [tool], recorder=crashed)
    assert sorted(crashed.produced) == ["step:0", "step:0:call:0", "step:0:call:2"]

    resumed = JsonRecorder(dict(crashed.log))
    result, events = await _turn(Script(text("done")), [tool], recorder=resumed)
    assert resumed.produced == ["step:0:call:1", "step:1"]
    assert sorted(runs) == ["a", "b", "b", "c"]  # only b ran again
    assert _results(result) == ["did a", "did b", "did c"]
    assert [e.type for e in events].count("action.result") == 1  # replayed calls emit none


@dataclass
class RoundApprover:
    """An approval hook that takes a step's requests as one round."""

    rounds: list[list[str]] = field(default_factory=list)

    def __call__(self, request: ApprovalRequest) -> bool:
        raise AssertionError("asked one call at a time")

    async def together(self, requests: Sequence[ApprovalRequest]) -> list[bool]:
        self.rounds.append([r.call_id for r in requests])
        return [r.input["item"] != "no" for r in requests]


async def test_the_approvals_of_a_step_are_asked_in_one_round() -> None:
    overlap = Overlap()
    gated = live(
        "gated",
        define_tool(
            description="G.",
            input_schema=Item,
            execute=lambda d, c: f"gated {d.item}",
            approval=always(),
        ),
    )
    script = Script(
        calls(
            ("work", {"item": "a"}),
            ("gated", {"item": "yes"}),
            ("work", {"item": "b"}),
            ("gated", {"item": "no"}),
        ),
        text("done"),
    )
    approver = RoundApprover()
    result, _ = await _turn(script, [overlapping(overlap), gated], approve=approver)
    assert approver.rounds == [["c1", "c3"]]
    assert _results(result) == [
        "did a",
        "gated yes",
        "did b",
        "gated needs approval and a person denied this call",
    ]

    # a plain hook is asked about each, one after another, before any of them runs
    asked: list[str] = []
    seen: list[str] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request.call_id)
        seen.append(str([e.data.call_id for e in later if e.type == "action.result"]))  # type: ignore[attr-defined]
        return True

    later: list[SessionEvent] = []
    script = Script(calls(("gated", {"item": "x"}), ("gated", {"item": "y"})), text("done"))
    setup = agent_setup(FunctionModel(script), instructions="s", tools=[gated])
    env = TurnEnvironment(on_event=later.append, approve=approve)
    result = await run_agent(setup, "go", env=env)
    assert asked == ["c0", "c1"] and seen == ["[]", "[]"]
    assert _results(result) == ["gated x", "gated y"]
