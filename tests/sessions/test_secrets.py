"""No secret in a response, the event log or the database files."""

from __future__ import annotations

from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Server, count

TOKEN = "tok_" + "s3cr3tz9" * 6


def test_a_tool_that_returns_a_secret_stores_only_the_redaction(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [call("secret"), say("ok")], tools=("secret",))
    server = Server(root, env={"EVE_API_TOKEN": TOKEN}, token=TOKEN).start()
    try:
        session = server.create("tell me")
        events = server.wait_for(session, count("session.waiting"))
        raw = server.get(f"/session/{session}/stream?follow=false").text
    finally:
        server.stop()
    [result] = [e["data"]["output"] for e in events if e["type"] == "action.result"]
    assert result == "the token is [redacted]"
    assert TOKEN not in raw
    stored = list((root / ".eve/sessions").iterdir())
    assert stored, "the embedded database lives under .eve/sessions"
    for path in stored:
        assert TOKEN.encode() not in path.read_bytes(), path.name
