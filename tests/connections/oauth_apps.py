"""An agent whose one connection, ``vault``, signs in to the protected test server
(tests/connections/oauth_server.py), for the tests that run it through eve's doors."""

from __future__ import annotations

from pathlib import Path

import pytest

from eve.connections.authorization import CALLBACK_PATH, REDIRECT_ENV
from tests.conftest import AppFactory
from tests.connections.oauth_server import AuthState
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Server

CONNECTION = """
import os

from eve.connections import define_mcp_connection, oauth

default = define_mcp_connection(
    description="A protected server.",
    url=os.environ["VAULT_URL"],
    auth=oauth(authorization_timeout_seconds=30),
    expose="tools",
)
"""


def vault_app(make_app: AppFactory, state: AuthState, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The agent, whose model calls ``vault__whoami`` once and then answers."""
    monkeypatch.setenv("VAULT_URL", state.resource)  # read when the connection compiles
    root = scripted_app(make_app, [call("vault__whoami"), say("done")])
    (root / "agent" / "connections").mkdir()
    (root / "agent" / "connections" / "vault.py").write_text(CONNECTION)
    return root


def vault_server(root: Path, state: AuthState) -> Server:
    """``eve serve`` of the agent, started, the person sent back to its own callback route."""
    server = Server(root, env={"VAULT_URL": state.resource})
    server.env[REDIRECT_ENV] = f"http://127.0.0.1:{server.port}{CALLBACK_PATH}"
    return server.start()
