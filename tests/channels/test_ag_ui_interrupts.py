"""The ag_ui channel's approvals: AG-UI interrupts, answered by the next run's ``resume``;
through ``@ag-ui/client``'s HttpAgent in Node."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.channels.ag_ui import client
from tests.channels.ag_ui.apps import served, thread, user
from tests.channels.ag_ui.client import scenario, types
from tests.channels.ag_ui.loopback import TOKEN, ChannelServer
from tests.sessions.apps import call, say


@pytest.fixture(scope="module", autouse=True)
def _client() -> None:
    client.install()


@pytest.fixture(scope="module")
def approvals(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChannelServer]:
    """Each session: a call of ``ship``, which a person approves, then an answer."""
    yield from served(
        tmp_path_factory, "approvals", [call("ship", item="anvil"), say("shipped")], ("ship",)
    )


def shipped(server: ChannelServer) -> str:
    log = server.app_root / "shipped.log"
    return log.read_text() if log.exists() else ""


def test_an_approval_is_an_interrupt_answered_by_resume(approvals: ChannelServer) -> None:
    before = shipped(approvals)
    result = client.run(
        scenario(
            approvals.channel_url,
            thread(),
            [{"message": user("ship the anvil")}, {"answer": "approve"}],
            token=TOKEN,
        )
    )
    parked, answered = result["runs"]
    finished = parked["events"][-1]
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "interrupt"
    assert types(parked["events"])[-2] == "STATE_SNAPSHOT"
    [interrupt] = finished["outcome"]["interrupts"]
    assert interrupt["reason"] == "tool_approval"
    assert interrupt["responseSchema"]["properties"]["optionId"]["enum"] == ["approve", "deny"]
    [start] = [e for e in parked["events"] if e["type"] == "TOOL_CALL_START"]
    assert interrupt["toolCallId"] == start["toolCallId"]
    assert interrupt["metadata"]["eve"]["input"] == {"item": "anvil"}
    # the client resumed every pending interrupt, and its run is the rest of the turn
    assert answered["error"] is None, answered
    assert answered["pendingInterrupts"] == []
    assert [e["content"] for e in answered["events"] if e["type"] == "TOOL_CALL_RESULT"] == [
        "shipped anvil"
    ]
    said = "".join(e["delta"] for e in answered["events"] if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert said == "shipped"
    assert "outcome" not in answered["events"][-1]
    assert shipped(approvals) == before + "anvil\n"  # approved, so shipped once


def test_an_abandoned_interrupt_cancels_the_turn(approvals: ChannelServer) -> None:
    before = shipped(approvals)
    result = client.run(
        scenario(
            approvals.channel_url,
            thread(),
            [{"message": user("ship it")}, {"abandon": True}],
            token=TOKEN,
        )
    )
    parked, abandoned = result["runs"]
    assert parked["events"][-1]["outcome"]["type"] == "interrupt"
    assert abandoned["events"][-1]["outcome"] == {"type": "cancelled"}, abandoned
    assert abandoned["pendingInterrupts"] == []
    assert shipped(approvals) == before  # nothing shipped
