"""``define_channel`` through the real app: its routes, its auth, the session facade."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from bench.channel_probes.custom import SOURCE as INBOX
from eve.channels.declaration import ChannelDeclaration, channel_routes
from eve.channels.serving import channel_declarations
from eve.compiler import compile_to_disk
from eve.errors import ChannelHandlerInvalid
from eve.runtime import load_compiled_agent
from eve.server.auth import token_authenticator
from eve.sessions import SessionService
from tests.conftest import AppFactory, wait_for_file, write_files
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer

TOKEN = "channel-test-token"
INBOX_PATH = "/channels/inbox"


def inbox_app(
    make_app: AppFactory, responses: list[dict[str, Any]], tools: tuple[str, ...]
) -> Path:
    root = scripted_app(make_app, responses, tools=tools)
    write_files(root, {"agent/channels/inbox.py": INBOX})
    return root


def serve(root: Path) -> InProcessServer:
    """The app as ``eve serve`` mounts it: its channels from the compiled manifest."""
    compile_to_disk(root)
    channels = asyncio.run(channel_declarations(load_compiled_agent(root)))
    server = InProcessServer(root, env={"EVE_API_TOKEN": TOKEN}, token=TOKEN, channels=channels)
    return server.start()


def call_inbox(
    server: InProcessServer, method: str, sub: str = "", **kwargs: Any
) -> httpx.Response:
    assert server.http is not None
    kwargs.setdefault("headers", server.headers())
    return server.http.request(method, INBOX_PATH + sub, **kwargs)


def log_until(server: InProcessServer, session: str, event_type: str, n: int = 1) -> list[Any]:
    """The session's log read through the channel, once it holds ``n`` events of a type."""
    done = count(event_type, n)
    server.wait_for(session, done)  # the session API's view: the channel's must agree
    events: list[Any] = call_inbox(server, "GET", f"/{session}/log").json()
    assert done(events)
    return events


def test_a_plain_answer_is_read_back_from_the_log(make_app: AppFactory) -> None:
    server = serve(inbox_app(make_app, [say("hello from eve")], ()))
    try:
        created = call_inbox(server, "POST", json={"text": "hi"})
        assert created.status_code == 202, created.text
        session = created.json()["sessionId"]
        events = log_until(server, session, "session.waiting")
        later = call_inbox(server, "GET", f"/{session}/log", params={"start": len(events) - 1})
        info = server.request("GET", "/info").json()
    finally:
        server.stop()
    answers = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert answers == ["hello from eve"]
    assert [e["meta"]["index"] for e in events] == list(range(len(events)))
    # read from an index: only what follows it
    assert [e["type"] for e in later.json()] == ["session.waiting"]
    assert {(c["method"], c["url_path"]) for c in info["channels"]} >= {("POST", INBOX_PATH)}


def test_an_approval_is_answered_through_the_channel(make_app: AppFactory) -> None:
    root = inbox_app(make_app, [call("ship", item="anvil"), say("shipped")], ("ship",))
    server = serve(root)
    try:
        session = call_inbox(server, "POST", json={"text": "ship it"}).json()["sessionId"]
        parked = log_until(server, session, "turn.waiting")
        [requested] = [e for e in parked if e["type"] == "input.requested"]
        request_id = requested["data"]["requests"][0]["request_id"]
        answer = {"request_id": request_id, "option_id": "approve"}
        answered = call_inbox(server, "POST", f"/{session}", json=answer)
        events = log_until(server, session, "session.waiting")
    finally:
        server.stop()
    assert (answered.status_code, answered.json()["status"]) == (202, "resolved")
    assert (root / "shipped.log").read_text() == "anvil\n"
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert (result["status"], result["output"]) == ("completed", "shipped anvil")


def test_cancel_through_the_channel_ends_the_turn(make_app: AppFactory) -> None:
    root = inbox_app(make_app, [call("ship", item="anvil"), say("shipped")], ("ship",))
    server = serve(root)
    try:
        session = call_inbox(server, "POST", json={"text": "ship it"}).json()["sessionId"]
        log_until(server, session, "turn.waiting")
        cancelled = call_inbox(server, "POST", f"/{session}/cancel")
        events = log_until(server, session, "turn.cancelled")
    finally:
        server.stop()
    assert cancelled.json() == {"cancelled": True}
    assert "turn.cancelled" in [e["type"] for e in events]
    assert not (root / "shipped.log").exists()


def test_bad_input_is_refused_and_stores_nothing(make_app: AppFactory) -> None:
    server = serve(inbox_app(make_app, [say("never")], ()))
    try:
        not_json = call_inbox(server, "POST", content=b"{oops")
        no_text = call_inbox(server, "POST", json={"txt": "hi"})
        unknown = call_inbox(server, "GET", "/sess_unknown/log")
        sessions = server.request("GET", "/sessions").json()["sessions"]
    finally:
        server.stop()
    assert (not_json.status_code, not_json.json()["error"]) == (400, "the body is not JSON")
    assert no_text.status_code == 400
    # a session operation the service refuses keeps its status and code
    assert (unknown.status_code, unknown.json()["code"]) == (404, "session_not_found")
    assert sessions == []


def test_the_token_is_required_unless_the_channel_says_none(make_app: AppFactory) -> None:
    root = inbox_app(make_app, [say("hello")], ())
    write_files(
        root,
        {
            "agent/channels/hook.py": """
                from starlette.responses import JSONResponse
                from eve.channels import define_channel

                async def whoami(request, sessions):
                    return JSONResponse({"principal": sessions.principal.id})

                default = define_channel(routes=["GET /"], handler=whoami, auth="none")
            """,
            "agent/channels/broken.py": """
                from eve.channels import define_channel

                async def not_a_response(request, sessions):
                    return {"principal": sessions.principal.id}

                default = define_channel(routes=["GET /"], handler=not_a_response)
            """,
        },
    )
    server = serve(root)
    try:
        refused = call_inbox(server, "POST", json={"text": "hi"}, headers={})
        wrong = call_inbox(
            server, "POST", json={"text": "hi"}, headers={"authorization": "Bearer nope"}
        )
        assert server.http is not None
        open_door = server.http.get("/channels/hook")
        broken = server.http.get("/channels/broken", headers=server.headers())
        sessions = server.request("GET", "/sessions").json()["sessions"]
    finally:
        server.stop()
    assert (refused.status_code, refused.json()["code"]) == (401, "unauthorized")
    assert refused.headers["www-authenticate"] == "Bearer"
    assert wrong.status_code == 401
    assert sessions == []
    assert open_door.json() == {"principal": "channel:hook"}
    assert (broken.status_code, broken.json()["code"]) == (500, "channel_handler_invalid")
    assert "returned dict" in broken.json()["error"]


def test_a_custom_channel_without_its_handler_is_refused_at_mount() -> None:
    declaration = ChannelDeclaration(
        name="inbox", kind="custom", path="/channels/inbox", options={"routes": []}
    )
    with pytest.raises(ChannelHandlerInvalid, match="run `eve compile`"):
        channel_routes(declaration, cast(SessionService, None), token_authenticator(None))


def test_a_restart_mid_turn_loses_nothing(make_app: AppFactory) -> None:
    root = inbox_app(make_app, [call("hold"), say("held and done")], ("hold",))
    server = serve(root)
    try:
        session = call_inbox(server, "POST", json={"text": "hold on"}).json()["sessionId"]
        wait_for_file(root / f"hold-{session}.started")
    finally:
        server.stop()  # mid-turn: the tool is still holding
    (root / "release").write_text("go")
    server.start()  # the same root: the durable turn recovers and runs on
    try:
        events = log_until(server, session, "session.waiting")
        followed = call_inbox(server, "GET", f"/{session}/log", params={"follow": "1"})
    finally:
        server.stop()
    answers = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert answers == ["held and done"]
    streamed = [json.loads(line) for line in followed.text.splitlines()]
    assert streamed == events
