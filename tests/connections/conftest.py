"""Fixtures of the OAuth tests: the protected test server and a session store for grants."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eve.sessions.store import SessionStore
from tests.connections.oauth_server import AuthState, protected_server


@pytest.fixture
def auth_server() -> Iterator[AuthState]:
    """The loopback authorization server and the MCP server it protects."""
    with protected_server() as state:
        yield state


@pytest.fixture
def grant_store(tmp_path: Path) -> Iterator[SessionStore]:
    """A SQLite session store, where connections keep their grants."""
    opened = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    yield opened
    opened.close()
