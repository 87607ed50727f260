"""What holds of a waiting sign-in across an ``eve serve`` crash (docs/connections.md,
"What holds across a restart"): the turn resumes and asks again with a new link, the old
link's callback is refused, and the tool runs once, after the sign-in."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import AppFactory
from tests.connections.oauth_apps import vault_app, vault_server
from tests.connections.oauth_server import protected_server
from tests.sessions.harness import count


def test_a_sign_in_waiting_at_a_crash_is_asked_again_after_the_restart(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with protected_server() as auth:
        server = vault_server(vault_app(make_app, auth, monkeypatch), auth)
        try:
            session = server.create("who am I?")
            events = server.wait_for(session, count("authorization.required"))
            [before] = [e["data"]["url"] for e in events if e["type"] == "authorization.required"]
            server.kill()
            server.restart()
            events = server.wait_for(session, count("authorization.required", 2))
            after = [e["data"]["url"] for e in events if e["type"] == "authorization.required"][1]
            assert after != before
            # the old link: the person signs in, but no process waits for its state any more
            stale = httpx.get(httpx.get(before).headers["location"])
            assert stale.status_code == 400 and stale.json()["code"] == "oauth_callback_invalid"
            fresh = httpx.get(httpx.get(after).headers["location"])
            assert fresh.status_code == 200, fresh.text
            events = server.wait_for(session, count("session.waiting"))
        finally:
            server.stop()
    results = [e["data"] for e in events if e["type"] == "action.result"]
    assert [(r["name"], r["output"]) for r in results] == [("vault__whoami", "alice")]
