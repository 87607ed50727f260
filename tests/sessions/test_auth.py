"""The auth rule: a token when one is set (constant-time), and no public bind without one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def refused_start(root: Path, args: list[str], without: str) -> subprocess.CompletedProcess[str]:
    """Run ``eve serve`` with ``args`` and the variable ``without`` unset; it must not start."""
    env = {k: v for k, v in os.environ.items() if k != without}
    return subprocess.run(
        [sys.executable, "-m", "eve", "serve", "--port", "0", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_binding_beyond_loopback_needs_a_token(make_app: AppFactory) -> None:
    result = refused_start(
        scripted_app(make_app, [say("hi")]), ["--host", "0.0.0.0"], "EVE_API_TOKEN"
    )
    assert result.returncode == 2
    assert "set EVE_API_TOKEN" in result.stderr


def test_several_workers_need_postgres(make_app: AppFactory) -> None:
    result = refused_start(
        scripted_app(make_app, [say("hi")]), ["--workers", "2"], "EVE_DATABASE_URL"
    )
    assert result.returncode == 2
    assert "needs PostgreSQL" in result.stderr
