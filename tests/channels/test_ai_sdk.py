"""The ai_sdk channel, through the ``ai`` package's own chat transport and UI message reader
(``readUIMessageStream``) in Node, against a real uvicorn on loopback: every chunk is
validated by the package's schemas and every message built by its state machine."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bench.channel_probes import Probe
from bench.channel_probes.ai_sdk import probe
from tests.channels.ai_sdk.harness import (
    CHANNEL,
    TOKEN,
    ChatServer,
    NodeClient,
    make_root,
    node_client,
)


@pytest.fixture(scope="module")
def node() -> Iterator[NodeClient]:
    yield from node_client()


@pytest.fixture(scope="module")
def server(node: NodeClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    running = ChatServer(make_root(tmp_path_factory.mktemp("ai_sdk"))).start()
    try:
        yield running
    finally:
        running.stop()


def types(result: dict[str, Any]) -> list[str]:
    """The chunks' types, but for the eve events beyond the vocabulary (``eve_types``)."""
    return [chunk["type"] for chunk in result["chunks"] if chunk["type"] != "data-eve"]


def eve_types(result: dict[str, Any]) -> list[str]:
    return [c["data"]["type"] for c in result["chunks"] if c["type"] == "data-eve"]


def parts(result: dict[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = result["message"]["parts"]
    return parts


def started(server: ChatServer, tool: str) -> str:
    """The session whose ``tool`` call is running now (its file written, not yet released);
    polled, as a file gives no event to wait on."""
    for _ in range(1500):
        for path in server.app_root.glob(f"{tool}-*.started"):
            session_id = path.name.removeprefix(f"{tool}-").removesuffix(".started")
            if not (server.app_root / f"release-{session_id}").exists():
                return session_id
        time.sleep(0.02)
    raise AssertionError(f"no {tool} call started")


def release(server: ChatServer, session_id: str) -> None:
    (server.app_root / f"release-{session_id}").write_text("go")


def test_a_plain_answer(server: ChatServer, node: NodeClient) -> None:
    [result] = node.run(server, [{"op": "send", "text": "hello there"}], chat="plain")
    assert types(result) == [
        "start", "start-step", "text-start", "text-delta", "text-delta", "text-delta",
        "text-end", "finish-step", "finish",
    ]  # fmt: skip
    message = result["message"]
    assert message["role"] == "assistant"
    assert message["id"] == f"{message['metadata']['sessionId']}:turn_0"
    texts = [p["text"] for p in parts(result) if p["type"] == "text"]
    assert texts == ["you said: hello there"]
    assert result["chunks"][-1]["finishReason"] == "stop"
    # the rest of the turn's events, transient: the message keeps none of them
    assert eve_types(result) == ["turn.started", "message.received"]
    assert all(c["transient"] for c in result["chunks"] if c["type"] == "data-eve")


def tool_part(result: dict[str, Any]) -> dict[str, Any]:
    [part] = [p for p in parts(result) if p["type"].startswith("tool-")]
    return part


def test_a_tool_call_approved_through_the_protocol(server: ChatServer, node: NodeClient) -> None:
    asked, approved = node.run(
        server,
        [{"op": "send", "text": "ship anvil"}, {"op": "approve", "approved": True}],
        chat="approve",
    )
    assert types(asked) == [
        "start", "start-step", "tool-input-start", "tool-input-delta", "tool-input-available",
        "tool-approval-request", "finish-step", "finish",
    ]  # fmt: skip
    requested = tool_part(asked)
    assert requested["type"] == "tool-ship"
    assert (requested["state"], requested["input"]) == ("approval-requested", {"item": "anvil"})
    assert requested["approval"]["id"].startswith("req_") or requested["approval"]["id"]
    # the answer continued the same message: the call's output, then the text
    assert approved["message"]["id"] == asked["message"]["id"]
    assert types(approved) == [
        "start", "start-step", "tool-output-available", "finish-step", "start-step",
        "text-start", "text-delta", "text-delta", "text-end", "finish-step", "finish",
    ]  # fmt: skip
    done = tool_part(approved)
    assert (done["state"], done["output"]) == ("output-available", "shipped anvil")
    assert [p["text"] for p in parts(approved) if p["type"] == "text"] == ["done: shipped anvil"]
    assert "input.resolved" in eve_types(approved)


def test_a_denied_call(server: ChatServer, node: NodeClient) -> None:
    _, denied = node.run(
        server,
        [{"op": "send", "text": "ship piano"}, {"op": "approve", "approved": False}],
        chat="deny",
    )
    assert tool_part(denied)["state"] == "output-denied"
    assert "tool-output-denied" in types(denied)


def test_reasoning_parts(server: ChatServer, node: NodeClient) -> None:
    [result] = node.run(server, [{"op": "send", "text": "think hard"}], chat="think")
    assert types(result)[:6] == [
        "start",
        "start-step",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
    ]
    assert [p["type"] for p in parts(result)] == ["step-start", "reasoning", "text"]
    assert parts(result)[1]["text"] == "thinking it over"


def test_a_dropped_stream_is_resumed_from_the_log(server: ChatServer, node: NodeClient) -> None:
    node.start(
        server,
        [{"op": "send", "text": "hold", "dropAfter": "tool-input-available"}, {"op": "resume"}],
        chat="drop",
    )
    session_id = started(server, "hold")
    node.streaming(1)  # the turn is still running as the client resumes
    release(server, session_id)
    dropped, resumed = node.finish()
    assert dropped["dropped"] and types(dropped)[-1] == "tool-input-available"
    # the replay rebuilt the whole turn's message, and followed it to its end
    assert resumed["resumed"] and resumed["message"]["id"] == dropped["message"]["id"]
    assert types(resumed)[:3] == ["start", "start-step", "tool-input-start"]
    assert types(resumed)[-1] == "finish"
    assert tool_part(resumed)["output"] == "released"
    assert [p["text"] for p in parts(resumed) if p["type"] == "text"] == ["done: released"]
    # nothing is running now: nothing to resume
    [again] = node.run(server, [{"op": "resume"}], chat="drop")
    assert again == {"resumed": False}


def test_a_cancel(server: ChatServer, node: NodeClient) -> None:
    node.start(server, [{"op": "send", "text": "wait"}], chat="cancel")
    session_id = started(server, "wait")
    answer = httpx.post(
        f"{server.base}{CHANNEL.path}/cancel/cancel",
        headers={"authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"ok": True, "sessionId": session_id, "cancelled": True}
    [cancelled] = node.finish()
    assert types(cancelled)[-1] == "abort"
    assert cancelled["chunks"][-1]["reason"]


def test_bad_input_is_refused_and_stores_nothing(server: ChatServer, node: NodeClient) -> None:
    before = len(server.sessions())
    regenerate, files = node.run(
        server,
        [
            {"op": "send", "text": "again", "trigger": "regenerate-message"},
            {"op": "send", "text": "x", "chatId": "x" * 129},
        ],
        chat="bad",
    )
    assert "invalid_body" in regenerate["error"] and "regenerate" in regenerate["error"]
    assert "chat id must be 1 to 128" in files["error"]
    url, auth = server.base + CHANNEL.path, {"authorization": f"Bearer {TOKEN}"}
    json_type = {**auth, "content-type": "application/json"}
    not_json = httpx.post(url, headers=json_type, content=b"{", timeout=10)
    assert (not_json.status_code, not_json.json()["code"]) == (400, "invalid_body")
    file_part = {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AA=="}
    body = {"id": "bad", "messages": [{"id": "m", "role": "user", "parts": [file_part]}]}
    refused = httpx.post(url, headers=auth, json=body, timeout=10)
    assert refused.status_code == 400 and "files are not carried" in refused.json()["error"]
    assert len(server.sessions()) == before


def test_auth_refused(server: ChatServer, node: NodeClient) -> None:
    before = len(server.sessions())
    [sent] = node.run(server, [{"op": "send", "text": "hi", "token": "wrong"}], chat="auth")
    assert "unauthorized" in sent["error"]
    for method, path in (("GET", "/auth/stream"), ("POST", "/auth/cancel")):
        answer = httpx.request(method, server.base + CHANNEL.path + path, timeout=10)
        assert (answer.status_code, answer.headers["www-authenticate"]) == (401, "Bearer")
    assert len(server.sessions()) == before


def test_a_restart_mid_turn_loses_nothing(server: ChatServer, node: NodeClient) -> None:
    node.start(
        server, [{"op": "send", "text": "hold"}, {"op": "resume", "untilEnd": True}], chat="restart"
    )
    session_id = started(server, "hold")
    server.stop()
    (server.app_root / f"hold-{session_id}.started").unlink()
    server.start()
    started(server, "hold")  # the recovered turn runs the call again
    # released once the client has resumed: a turn that ended first has nothing to resume
    # (the AI SDK's reconnectToStream then gets 204, as it should)
    for _ in range(1500):
        if server.followed():
            break
        time.sleep(0.01)
    else:
        raise AssertionError("the client never resumed the chat's stream")
    release(server, session_id)
    cut, resumed = node.finish()
    assert "finish" not in types(cut)  # the stopping server ended the stream whole
    assert types(resumed)[-1] == "finish"
    assert tool_part(resumed)["output"] == "released"
    assert [p["text"] for p in parts(resumed) if p["type"] == "text"] == ["done: released"]


def test_the_latency_probe(server: ChatServer, node: NodeClient) -> None:
    auth = {"authorization": f"Bearer {TOKEN}"}

    async def probed() -> Probe:
        async with httpx.AsyncClient(base_url=server.base, headers=auth, timeout=30) as client:
            return await probe(client, CHANNEL.path)

    measured = asyncio.run(probed())
    assert measured.first_byte > 0 and len(measured.gaps) >= 8  # start … finish, [DONE]


def sse_chunks(response: httpx.Response) -> list[dict[str, Any]]:
    lines = response.text.splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


def test_a_repeated_request_replays_its_turn(server: ChatServer) -> None:
    """The same user message (its UI id) sent again, as after a lost answer: the same turn
    is streamed again from the log, and no second turn runs."""
    text = {"type": "text", "text": "once only"}
    body = {"id": "repeat", "messages": [{"id": "m-1", "role": "user", "parts": [text]}]}
    headers = {"authorization": f"Bearer {TOKEN}"}
    url = server.base + CHANNEL.path
    first, again = (httpx.post(url, json=body, headers=headers, timeout=30) for _ in range(2))
    assert first.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert first.text.endswith("data: [DONE]\n\n") and again.text.endswith("data: [DONE]\n\n")
    vocabulary = [c for c in sse_chunks(first) if c["type"] != "data-eve"]
    assert [c for c in sse_chunks(again) if c["type"] != "data-eve"] == vocabulary
    session_id = vocabulary[0]["messageMetadata"]["sessionId"]
    [listed] = [s for s in server.sessions() if s["sessionId"] == session_id]
    assert listed["turns"] == 1
