"""Each channel whose protocol carries a bearer, with real tokens: alice (a JWT of the
loopback provider) opens a conversation, and bob (another JWT) cannot read or continue it
through the channel; what he names that is hers reaches nothing of hers. One server mounts
every kind; each session's first turn asks to ship (it parks), the next ones answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    SubscribeToTaskRequest,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from openai import OpenAI

from bench.channel_probes.custom import SOURCE as INBOX
from eve.channels.declaration import ChannelDeclaration
from eve.channels.serving import channel_declarations
from eve.compiler import compile_to_disk
from eve.runtime import load_compiled_agent
from tests.channels import a2a_client as a2a
from tests.channels.mcp import client as mcp
from tests.oidc.provider import Provider
from tests.sessions.apps import TOOLS, call, say
from tests.sessions.harness import count
from tests.sessions.inprocess import ROOT, InProcessServer
from tests.sessions.principals import ALICE, bearer, scripted_root, verifying

AI_SDK = ChannelDeclaration(name="chat", kind="ai_sdk", path="/channels/chat")
AG_UI = ChannelDeclaration(name="ui", kind="ag_ui", path="/channels/ui")
OPENAI = ChannelDeclaration(name="tea", kind="openai", path="/channels/tea")
MCP = ChannelDeclaration(name="agent", kind="mcp", path=mcp.PATH)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, oidc_provider: Provider
) -> Iterator[InProcessServer]:
    parked_then_answers = [call("ship", item="anvil"), say("shipped"), say("again")]
    files = {"agent/tools/ship.py": TOOLS["ship"], "agent/channels/inbox.py": INBOX}
    root = scripted_root(tmp_path_factory, parked_then_answers, files)
    compile_to_disk(root)
    custom = asyncio.run(channel_declarations(load_compiled_agent(root)))
    channels = [*custom, a2a.CHANNEL, AI_SDK, AG_UI, OPENAI, MCP]
    running = verifying(root, oidc_provider, channels=channels).start()
    yield running
    running.stop()


def post(server: InProcessServer, path: str, body: Any, sub: str, oidc_provider: Provider) -> Any:
    assert server.http is not None
    return server.http.post(ROOT + path, json=body, headers=bearer(oidc_provider.token(sub)))


def untouched(server: InProcessServer, session: str) -> None:
    """Alice's session still waits on her first turn's approval: nothing of bob's ran."""
    events = server.events(session)
    assert [e["type"] for e in events].count("turn.started") == 1, events
    assert events[-1]["type"] == "turn.waiting"
    assert server.get(f"/session/{session}").json()["owner"]["id"] == ALICE.id


def parked_session(server: InProcessServer) -> str:
    """The one session alice's channel call opened (the operator sees them all)."""
    owned = [
        s["sessionId"]
        for s in server.get("/sessions?limit=100").json()["sessions"]
        if s["owner"]["id"] == ALICE.id
    ]
    return owned[0]


async def test_a2a_another_callers_task_is_not_found(
    server: InProcessServer, oidc_provider: Provider
) -> None:
    async with a2a.a2a_client(server, token=oidc_provider.token("alice"), streaming=False) as alice:
        [reply] = [item async for item in alice.send_message(a2a.text("ship it"))]
        task = reply.task
        assert task.status.state == a2a.INPUT_REQUIRED
        assert (await alice.get_task(GetTaskRequest(id=task.id))).id == task.id
    async with a2a.a2a_client(server, token=oidc_provider.token("bob")) as bob:
        with pytest.raises(TaskNotFoundError):
            await bob.get_task(GetTaskRequest(id=task.id))
        with pytest.raises(TaskNotFoundError):
            async for _ in bob.subscribe(SubscribeToTaskRequest(id=task.id)):
                pass
        with pytest.raises(TaskNotFoundError):
            await bob.cancel_task(CancelTaskRequest(id=task.id))
        with pytest.raises(InvalidParamsError, match="no context"):
            await bob.list_tasks(ListTasksRequest(context_id=task.context_id))
        with pytest.raises(InvalidParamsError, match="no context"):
            await a2a.read(bob, a2a.text("mine now", context_id=task.context_id))
    untouched(server, task.context_id)


async def test_mcp_agent_get_of_another_callers_session_is_not_found(
    server: InProcessServer, oidc_provider: Provider
) -> None:
    async with mcp.connect(server, oidc_provider.token("alice")) as alice:
        parked = mcp.view(await alice.call_tool("agent_start", {"message": "ship it"}))
    session = parked["session_id"]
    async with mcp.connect(server, oidc_provider.token("bob")) as bob:
        got = mcp.refusal(await bob.call_tool("agent_get", {"session_id": session}))
        assert got[0] == "session_not_found"
        sent = {"session_id": session, "message": "mine now"}
        assert mcp.refusal(await bob.call_tool("agent_update", sent))[0] == "session_not_active"
        cancelled = mcp.refusal(await bob.call_tool("agent_cancel", {"session_id": session}))
        assert cancelled[0] == "session_not_found"
    untouched(server, session)


def test_openai_another_callers_response_is_not_found(
    server: InProcessServer, oidc_provider: Provider
) -> None:
    def client(sub: str) -> OpenAI:
        return OpenAI(
            base_url=f"{ROOT}{OPENAI.path}/v1",
            api_key=oidc_provider.token(sub),
            http_client=httpx.Client(transport=server.transport()),
            max_retries=0,
        )

    alice, bob = client("alice"), client("bob")
    first = alice.responses.create(model="tea", input="ship it")
    session = first.id.split("_", 3)[3]
    with pytest.raises(openai.NotFoundError):
        bob.responses.retrieve(first.id)
    with pytest.raises(openai.NotFoundError) as continued:
        bob.responses.create(model="tea", input="mine now", previous_response_id=first.id)
    assert (continued.value.status_code, continued.value.code) == (404, "session_not_found")
    chat = [{"role": "user", "content": "mine now"}]
    for named in (session, "ses_nobody"):  # hers answers as a session nobody has does
        with pytest.raises(openai.NotFoundError) as refused:
            bob.chat.completions.create(
                model="tea", messages=chat, extra_headers={"x-eve-session-id": named}
            )
        assert refused.value.code == "session_not_found"
    untouched(server, session)


def _chunks(response: httpx.Response) -> list[dict[str, Any]]:
    lines = response.text.splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


def test_ai_sdk_another_callers_chat_id_opens_a_chat_of_their_own(
    server: InProcessServer, oidc_provider: Provider
) -> None:
    message = {"id": "m-1", "role": "user", "parts": [{"type": "text", "text": "ship it"}]}
    sent = post(
        server, AI_SDK.path, {"id": "chat-a", "messages": [message]}, "alice", oidc_provider
    )
    session = _chunks(sent)[0]["messageMetadata"]["sessionId"]
    assert server.http is not None
    for chat in ("chat-a", session):  # her chat's id, and her session's
        resumed = server.http.get(
            f"{ROOT}{AI_SDK.path}/{chat}/stream", headers=bearer(oidc_provider.token("bob"))
        )
        assert resumed.status_code == 204, chat  # his own chat of that id runs nothing
        theirs = post(
            server, AI_SDK.path, {"id": chat, "messages": [message]}, "bob", oidc_provider
        )
        assert _chunks(theirs)[0]["messageMetadata"]["sessionId"] != session
    mine = server.http.get(
        f"{ROOT}{AI_SDK.path}/chat-a/stream", headers=bearer(oidc_provider.token("alice"))
    )
    assert mine.status_code == 200 and _chunks(mine)[0]["messageMetadata"]["sessionId"] == session
    untouched(server, session)


def test_ag_ui_another_callers_thread_is_a_thread_of_their_own(
    server: InProcessServer, oidc_provider: Provider
) -> None:
    def run(thread: str, sub: str, **more: Any) -> list[dict[str, Any]]:
        message = {"id": f"{thread}-{sub}", "role": "user", "content": "ship it"}
        body = {"threadId": thread, "runId": f"r-{sub}", "messages": [message], **more}
        return _chunks(post(server, AG_UI.path, body, sub, oidc_provider))

    parked = run("t-alice", "alice")
    [interrupt] = parked[-1]["outcome"]["interrupts"]
    session = parked_session(server)
    for thread in ("t-alice", session):  # her thread's id, and her session's
        answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": "approve"}
        body = {"threadId": thread, "runId": "r-b", "messages": [], "resume": [answer]}
        refused = post(server, AG_UI.path, body, "bob", oidc_provider)
        assert refused.json()["code"] == "input_request_not_pending", refused.text
        cancel = post(server, AG_UI.path + "/cancel", {"threadId": thread}, "bob", oidc_provider)
        assert cancel.json() == {"ok": True, "cancelled": False}  # his thread runs nothing
    untouched(server, session)


def test_custom_another_callers_session_is_not_found(
    server: InProcessServer, oidc_provider: Provider
) -> None:
    started = post(server, "/channels/inbox", {"text": "ship it"}, "alice", oidc_provider)
    session = started.json()["sessionId"]
    server.wait_for(session, count("turn.waiting"))
    assert server.http is not None
    bobs = bearer(oidc_provider.token("bob"))
    log = server.http.get(f"{ROOT}/channels/inbox/{session}/log", headers=bobs)
    assert (log.status_code, log.json()["code"]) == (404, "session_not_found")
    sent = post(server, f"/channels/inbox/{session}", {"text": "mine now"}, "bob", oidc_provider)
    assert (sent.status_code, sent.json()["code"]) == (409, "session_not_active")
    cancelled = post(server, f"/channels/inbox/{session}/cancel", {}, "bob", oidc_provider)
    assert cancelled.status_code == 404
    untouched(server, session)
