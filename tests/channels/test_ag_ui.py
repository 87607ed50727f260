"""The ``ag_ui`` channel through the client its users run: ``@ag-ui/client``'s HttpAgent in
Node, against the app on a loopback uvicorn. The client's own verifier checks every run's
event order; these tests check what the runs carry."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
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
def answers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChannelServer]:
    """Each session: a call of ``leak`` (it counts in ``define_state("mine")``), its
    answer, then a plain answer to the next message."""
    yield from served(
        tmp_path_factory,
        "answers",
        [call("leak"), say("counted"), say("a plain answer")],
        ("leak",),
    )


def test_a_tool_call_then_a_plain_answer_with_the_state(answers: ChannelServer) -> None:
    result = client.run(
        scenario(
            answers.channel_url,
            thread(),
            [{"message": user("count")}, {"message": user("and now?")}],
            token=TOKEN,
        )
    )
    first, second = result["runs"]
    assert first["error"] is None and second["error"] is None, result
    assert types(first["events"]) == [
        "RUN_STARTED",
        "STEP_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "STEP_FINISHED",
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    [start] = [e for e in first["events"] if e["type"] == "TOOL_CALL_START"]
    [outcome] = [e for e in first["events"] if e["type"] == "TOOL_CALL_RESULT"]
    assert start["toolCallName"] == "leak"
    assert json.loads(outcome["content"]) == {"module_global": 1, "session_state": 1}
    assert [e["snapshot"] for e in first["events"] if e["type"] == "STATE_SNAPSHOT"] == [
        {"mine": 1}
    ]
    said = "".join(e["delta"] for e in second["events"] if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert said == "a plain answer"
    assert types(second["events"])[-1] == "RUN_FINISHED"
    # the client's conversation: both questions, the call, its result and both answers
    roles = [m["role"] for m in result["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"], roles
    assert result["state"] == {"mine": 1}
    started = first["events"][0]
    assert started["metadata"]["eveSessionId"].startswith("ses_")
    assert second["events"][0]["metadata"] == started["metadata"]  # one thread, one session


def test_a_client_without_the_token_is_refused(answers: ChannelServer) -> None:
    result = client.run(scenario(answers.channel_url, thread(), [{"message": user("hi")}]))
    [refused] = result["runs"]
    assert refused["error"] is not None and "HTTP 401" in refused["error"], refused
    assert "unauthorized" in refused["error"]


def test_bad_input_is_a_protocol_error_and_stores_nothing(answers: ChannelServer) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    sessions = f"{answers.base}/eve/v1/sessions"
    before = httpx.get(sessions, headers=auth).json()
    bodies = [
        b"not json",
        json.dumps({"threadId": "t", "runId": "r"}).encode(),  # no messages
        json.dumps({"threadId": "t", "runId": "r", "messages": []}).encode(),  # no user
        json.dumps(
            {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "m", "role": "user", "content": [{"type": "image"}]}],
            }
        ).encode(),
    ]
    for body in bodies:
        refused = httpx.post(answers.channel_url, content=body, headers=auth)
        assert refused.status_code == 400, refused.text
        assert refused.json()["code"] == "invalid_body"
    assert httpx.get(sessions, headers=auth).json() == before
