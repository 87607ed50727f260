"""A tool's result is capped for the model (the tool's cap, else the agent's, else one sized
to the window) with a marker, and kept for the event log up to the store's cap."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import msgspec
import pytest

from eve.errors import AuthoringError
from eve.events import ActionResult, SessionEvent
from eve.execution import TurnEnvironment, agent_setup, run_agent
from eve.execution.tool_output import DEFAULT_CHARS, STORE_CHARS, default_model_chars
from eve.manifest import Limits
from eve.messages import ToolResultMessage
from eve.models.base import ModelRequest
from eve.models.events import ModelEvent
from eve.models.function import FunctionModel
from eve.tools import define_tool, tool
from tests.execution.helpers import calls, live, text
from tests.execution.test_checkpoints import JsonRecorder

TEN_MB = 10_000_000


@tool
def dump() -> str:
    """Dump the whole log."""
    return "0123456789" * (TEN_MB // 10)


@tool(max_output_chars=500)
def dump_short() -> str:
    """Dump the log, 500 characters of it for the model."""
    return "abcdefghij" * 1_000


async def _turn(
    name: str, *, limits: Limits | None = None, model_id: str = "function", tmp: Path
) -> tuple[ToolResultMessage, ActionResult, JsonRecorder]:
    requests: list[ModelRequest] = []

    def model(request: ModelRequest) -> list[ModelEvent]:
        requests.append(request)
        return calls((name, {})) if len(requests) == 1 else text("done")

    setup = agent_setup(
        FunctionModel(model, model_id=model_id),
        tools=[live("dump", dump), live("dump_short", dump_short)],
    )
    if limits is not None:
        config = msgspec.structs.replace(setup.agent.config, limits=limits)
        setup = dataclasses.replace(setup, agent=dataclasses.replace(setup.agent, config=config))
    events: list[SessionEvent] = []
    recorder = JsonRecorder()
    env = TurnEnvironment(on_event=events.append, recorder=recorder, transcript=tmp / "t.jsonl")
    await run_agent(setup, "go", env=env)
    [sent] = [m for m in requests[1].messages if isinstance(m, ToolResultMessage)]
    [result] = [e for e in events if isinstance(e, ActionResult)]
    return sent, result, recorder


async def test_a_10_mb_result_reaches_the_model_capped_and_the_store_bounded(
    tmp_path: Path,
) -> None:
    sent, result, recorder = await _turn("dump", tmp=tmp_path)
    head, marker = sent.content[:DEFAULT_CHARS], sent.content[DEFAULT_CHARS:]
    assert head == "0123456789" * (DEFAULT_CHARS // 10)
    assert marker.startswith(
        "\n[output truncated: 10,000,000 characters, the first 100,000 shown. The rest is not "
        "in this conversation: to read more, call the tool again for a smaller part"
    )
    assert len(marker) < 300 and not sent.is_error
    # the event keeps the whole result up to the store's cap, and says it was cut
    output = result.data.output
    assert output.startswith("0123456789" * 1000) and len(output) < STORE_CHARS + 100
    assert output.endswith("\n[stored truncated: 10,000,000 characters, the first 1,000,000 kept]")
    # what a durable store records (the checkpoint: what the model read) and the transcript
    recorded = sum(len(value) for value in recorder.log.values())
    assert DEFAULT_CHARS < recorded < 2 * DEFAULT_CHARS
    assert (tmp_path / "t.jsonl").stat().st_size < 2 * DEFAULT_CHARS


async def test_the_tools_cap_comes_before_the_agents(tmp_path: Path) -> None:
    agent_cap = Limits(max_tool_output_chars=2_000)
    sent, result, _ = await _turn("dump_short", limits=agent_cap, tmp=tmp_path)
    assert sent.content.startswith("abcdefghij" * 50 + "\n[output truncated: 10,000 characters")
    assert "the first 500 shown" in sent.content
    assert result.data.output == "abcdefghij" * 1_000  # under the store's cap: whole
    sent, _, _ = await _turn("dump", limits=agent_cap, tmp=tmp_path)
    assert sent.content.startswith("0123456789" * 200 + "\n[output truncated: 10,000,000")


async def test_the_default_cap_is_sized_to_a_small_window(tmp_path: Path) -> None:
    assert default_model_chars(None) == DEFAULT_CHARS == default_model_chars(1_000_000)
    assert default_model_chars(16_000) == 16_000
    sent, _, _ = await _turn("dump", model_id="offline/test", tmp=tmp_path)  # a 16k window
    assert "the first 16,000 shown" in sent.content and len(sent.content) < 16_300


def test_a_cap_is_a_positive_number_of_characters() -> None:
    with pytest.raises(AuthoringError, match="max_output_chars takes a number of characters"):
        define_tool(description="d", execute=lambda data, ctx: "", max_output_chars=0)
