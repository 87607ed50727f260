"""A failing tool's traceback: kept in its ``action.result`` for a person, bounded and
redacted; the model reads only the one-line error."""

from __future__ import annotations

import os
import re

import pytest

from eve._redact import REDACTED
from eve.events import ActionResult, SessionEvent
from eve.execution import TurnEnvironment, agent_setup, run_agent
from eve.execution.tracebacks import MAX_CHARS, MAX_FRAMES, bounded
from eve.messages import ToolResultMessage
from eve.models.base import ModelRequest
from eve.models.events import ModelEvent
from eve.models.function import FunctionModel
from eve.tools import tool
from tests.execution.helpers import calls, live, text

#: not shaped like a provider key: only the environment net (EVE_API_TOKEN) catches it
SECRET = "pay-token-0123456789abcdef"


@tool
def charge(amount: int) -> str:
    """Charge the card (fails: the key it read is refused)."""
    key = os.environ["EVE_API_TOKEN"]  # a local holding the secret
    raise PermissionError(f"the payment service refused key {key} for {amount}")


def _deep(depth: int) -> None:
    if depth == 0:
        raise RecursionError("too deep, on purpose")
    _deep(depth - 1)


@tool
def recurse() -> str:
    """Fails 200 frames down."""
    _deep(200)
    return "unreachable"


async def _failing_turn(name: str) -> tuple[ActionResult, list[ModelRequest]]:
    requests: list[ModelRequest] = []

    def model(request: ModelRequest) -> list[ModelEvent]:
        requests.append(request)
        return (
            calls((name, {"amount": 5} if name == "charge" else {}))
            if len(requests) == 1
            else (text("it failed"))
        )

    events: list[SessionEvent] = []
    setup = agent_setup(
        FunctionModel(model), tools=[live("charge", charge), live("recurse", recurse)]
    )
    await run_agent(setup, "go", env=TurnEnvironment(on_event=events.append))
    [result] = [e for e in events if isinstance(e, ActionResult)]
    return result, requests


async def test_the_event_keeps_the_traceback_and_the_model_reads_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVE_API_TOKEN", SECRET)
    result, requests = await _failing_turn("charge")
    trace = result.data.traceback
    assert result.data.status == "failed" and trace is not None
    assert trace.startswith("Traceback (most recent call last):\n")
    # from the tool's own frame on: eve's runner and asyncio's thread hand-off are left out
    assert re.findall(r'File "([^"]+)", line \d+, in (\w+)', trace) == [(__file__, "charge")]
    assert "PermissionError: the payment service refused key [redacted] for 5" in trace
    assert SECRET not in trace and REDACTED in trace
    # the model's next request: the one-line error, no traceback
    [tool_result] = [m for m in requests[1].messages if isinstance(m, ToolResultMessage)]
    assert (
        tool_result.content == f"PermissionError: the payment service refused key {REDACTED} for 5"
    )
    assert "Traceback" not in repr(requests[1].messages)


async def test_a_deep_traceback_keeps_its_last_frames_within_the_size_cap() -> None:
    result, _ = await _failing_turn("recurse")
    trace = result.data.traceback
    assert trace is not None and len(trace) <= MAX_CHARS + 80
    assert trace.endswith("RecursionError: too deep, on purpose\n")
    frames = re.findall(r'File "[^"]+", line \d+, in (\w+)', trace)
    assert 0 < len(frames) <= MAX_FRAMES and frames[-1] == "_deep"


def test_a_long_text_is_cut_from_the_start_and_says_how_much() -> None:
    assert bounded("short", limit=10) == "short"
    assert bounded("0123456789abcdef", limit=6) == (
        "[traceback cut: the first 10 characters left out]\nabcdef"
    )
