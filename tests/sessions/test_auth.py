"""The auth rule: a token when one is set (constant-time), and no public bind without one."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from eve.cli.main import main
from eve.errors import ServerConfigError
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.inprocess import InProcessServer

TOKEN = "tok_" + "a1b2c3d4" * 6


def test_every_route_but_health_needs_the_token(make_app: AppFactory) -> None:
    server = InProcessServer(
        scripted_app(make_app, [say("hi")]), env={"EVE_API_TOKEN": TOKEN}
    ).start()
    try:
        assert server.get("/health", headers={}).status_code == 200
        for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": TOKEN}):
            response = server.get("/info", headers=headers)
            assert response.status_code == 401
            assert response.json() == {
                "ok": False,
                "code": "unauthorized",
                "error": "missing or wrong bearer token",
            }
            assert response.headers["www-authenticate"] == "Bearer"
            assert server.post("/session", {}, headers=headers).status_code == 401
        server.token = TOKEN
        assert server.get("/info").status_code == 200
        assert server.post("/session", {}).status_code == 202
    finally:
        server.stop()


def refused_start(root: Path, args: list[str], without: str) -> Result:
    """``eve serve`` with ``args`` and the variable ``without`` unset; it must not start.

    Refused before anything is bound or started, so the command runs in this process."""
    args = ["-C", str(root), "serve", "--port", "0", *args]
    return CliRunner().invoke(main, args, env={without: None})


def test_binding_beyond_loopback_needs_a_token(make_app: AppFactory) -> None:
    result = refused_start(
        scripted_app(make_app, [say("hi")]), ["--host", "0.0.0.0"], "EVE_API_TOKEN"
    )
    assert result.exit_code == ServerConfigError.exit_code == 2, result.output
    assert "set EVE_API_TOKEN" in result.output
