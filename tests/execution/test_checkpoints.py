"""The durability seam: a recorder that replays recorded steps re-runs neither model nor tool."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from pydantic import BaseModel

from eve.execution.recording import Produce, RecordKind, T
from eve.models.function import FunctionModel
from eve.tools import define_tool
from tests.execution.helpers import Script, calls, live, text, turn


class Item(BaseModel):
    item: str


class JsonRecorder:
    """Stores each value as JSON bytes, as a durable store would; replays what it has."""

    def __init__(self, log: dict[str, bytes] | None = None) -> None:
        self.log = log if log is not None else {}
        self.produced: list[str] = []

    async def record(self, key: str, produce: Produce[T], kind: RecordKind[T]) -> T:
        if key in self.log:
            return kind.decoder.decode(self.log[key])
        value = await produce()
        self.produced.append(key)
        self.log[key] = msgspec.json.encode(value)
        return value


async def test_a_replayed_turn_calls_nothing_again_and_ends_the_same() -> None:
    runs: list[str] = []
    tool = live(
        "note",
        define_tool(
            description="N.",
            input_schema=Item,
            execute=lambda d, c: runs.append(d.item) or f"noted {d.item}",
        ),
    )
    first = JsonRecorder()
    result = await turn(
        client=FunctionModel(Script(calls(("note", {"item": "a"})), text("done"))),
        system="s",
        tools=[tool],
        user_message="go",
        recorder=first,
    )
    assert first.produced == ["step:0", "step:1"]  # one checkpoint per step

    def no_model(request: object) -> list[Any]:
        raise AssertionError("a recorded step asked the model again")

    again = JsonRecorder(dict(first.log))
    replayed = await turn(
        client=FunctionModel(no_model), system="s", tools=[tool], user_message="go", recorder=again
    )
    assert again.produced == []
    assert runs == ["a"]  # the tool ran exactly once across both runs
    assert replayed.messages == result.messages and replayed.usage == result.usage


async def test_a_crash_after_the_tool_resumes_at_the_next_model_call() -> None:
    runs: list[str] = []
    tool = live(
        "note",
        define_tool(
            description="N.", input_schema=Item, execute=lambda d, c: runs.append(d.item) or "ok"
        ),
    )
    crashed = JsonRecorder()

    def crash_on_second(request: object) -> list[Any]:
        if len(model.requests) == 2:
            raise RuntimeError("process died")
        return calls(("note", {"item": "a"}))

    model = FunctionModel(crash_on_second)
    with pytest.raises(RuntimeError, match="process died"):
        await turn(client=model, system="s", tools=[tool], user_message="go", recorder=crashed)
    resumed = JsonRecorder(dict(crashed.log))
    result = await turn(
        client=FunctionModel(Script(text("finished"))),
        system="s",
        tools=[tool],
        user_message="go",
        recorder=resumed,
    )
    assert resumed.produced == ["step:1"]
    assert runs == ["a"] and result.final_text == "finished"
