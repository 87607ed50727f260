"""An MCP connection's OAuth sign-in in a durable session of the real app: the turn shows
``authorization.required``, the person signs in and comes back through the HTTP API's
callback route, and no token lands in the events or any database table but eve's grants."""

from __future__ import annotations

import httpx
import pytest

from eve.connections.authorization import CALLBACK_PATH, REDIRECT_ENV
from tests.conftest import AppFactory
from tests.connections.oauth_apps import vault_app
from tests.connections.oauth_server import AuthState
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_secrets import stored_cells

#: where the app is reached from the browser (behind a proxy, say)
PUBLIC = "https://agent.example.invalid"


def test_the_turn_waits_for_the_sign_in_that_the_callback_route_completes(
    make_app: AppFactory, auth_server: AuthState, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = vault_app(make_app, auth_server, monkeypatch)
    app = InProcessServer(
        root, env={"VAULT_URL": auth_server.resource, REDIRECT_ENV: PUBLIC + CALLBACK_PATH}
    ).start()
    try:
        session = app.create("who am I?")
        events = app.wait_for(session, count("authorization.required"))
        [asked] = [e["data"] for e in events if e["type"] == "authorization.required"]
        assert asked["connection"] == "vault" and asked["timeout_seconds"] == 30
        # the person signs in at the authorization server, whose redirect comes to eve
        approved = httpx.get(asked["url"])
        assert approved.status_code == 302
        back = approved.headers["location"]
        assert back.startswith(PUBLIC + CALLBACK_PATH + "?")
        # the browser reaches the app at its public URL: here, in process
        answered = app.http.get(back.removeprefix(PUBLIC))  # type: ignore[union-attr]
        assert answered.status_code == 200, answered.text
        events = app.wait_for(session, count("session.waiting"))
        # the same callback again (the person reloads the tab): signed in, and nothing
        # more happens (no second exchange, no event)
        grants = list(auth_server.grants)
        again = app.http.get(back.removeprefix(PUBLIC))  # type: ignore[union-attr]
        assert again.status_code == 200 and again.json() == answered.json()
        assert auth_server.grants == grants and app.events(session) == events
        raw = app.get(f"/session/{session}/stream?follow=false").text
    finally:
        app.stop()
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert result["output"] == "alice" and not result.get("is_error")
    assert auth_server.authorizations == 1 and auth_server.issued
    # no token in the stream, the events, DBOS's tables or eve's others: only the grant
    # row holds them (checked present, so the scan would have found them)
    for token in auth_server.issued:
        assert token not in raw
    held = [cell for table, cell in stored_cells(root) if table == "eve_mcp_oauth"]
    assert any(auth_server.issued[0].encode() in cell for cell in held)
    for table, cell in stored_cells(root):
        if table != "eve_mcp_oauth":
            assert not any(token.encode() in cell for token in auth_server.issued), table
    dbos = (root / ".eve/sessions/dbos.sqlite").read_bytes()
    assert not any(token.encode() in dbos for token in auth_server.issued)


def test_an_unknown_callback_is_refused(make_app: AppFactory) -> None:
    app = InProcessServer(make_app()).start()
    try:
        answered = app.http.get(CALLBACK_PATH + "?state=nobody&code=x")  # type: ignore[union-attr]
        empty = app.http.get(CALLBACK_PATH + "?state=nobody")  # type: ignore[union-attr]
    finally:
        app.stop()
    assert answered.status_code == 400 and "no sign-in waits" in answered.json()["error"]
    assert empty.status_code == 400 and empty.json()["code"] == "oauth_callback_invalid"
