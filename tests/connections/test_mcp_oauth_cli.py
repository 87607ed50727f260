"""``eve run`` with a connection that signs in: the link printed, the person's redirect
answered by eve's own loopback listener, and the grant kept in the app's session database
(a real process: ``eve run`` serves no HTTP, so this is its only door)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from eve.compiler import compile_agent
from eve.connections.authorization import CALLBACK_PATH, REDIRECT_ENV
from tests import forked
from tests.conftest import AppFactory
from tests.connections.oauth_apps import vault_app
from tests.connections.oauth_server import protected_server
from tests.connections.servers import free_port


def eve_run(root: Path, env: dict[str, str]) -> forked.Command:
    return forked.popen(
        [sys.executable, "-m", "eve", "-C", str(root), "run", "who am I?"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **env, "PYTHONUNBUFFERED": "1"},
    )


def test_eve_run_prints_the_link_and_takes_the_callback_itself(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with protected_server() as server:
        root = vault_app(make_app, server, monkeypatch)
        env = {
            "VAULT_URL": server.resource,
            REDIRECT_ENV: f"http://127.0.0.1:{free_port()}{CALLBACK_PATH}",
        }
        assert compile_agent(root).manifest is not None
        process = eve_run(root, env)
        assert process.stdout is not None
        seen: list[str] = []
        for line in process.stdout:
            seen.append(line)
            if line.strip().startswith(server.issuer + "/authorize?"):
                approved = httpx.get(line.strip())
                back = httpx.get(approved.headers["location"])  # eve's loopback listener
                assert back.status_code == 200, back.text
                break
        rest, _ = process.communicate(timeout=60)
        output = "".join(seen) + rest
        assert process.returncode == 0, output
        assert "needs you to sign in" in output and "vault__whoami: alice" in output
    assert server.authorizations == 1
    with sqlite3.connect(root / ".eve/sessions/eve.sqlite") as db:
        [(principal,)] = db.execute("SELECT principal FROM eve_mcp_oauth").fetchall()
    assert principal == "operator:operator"
