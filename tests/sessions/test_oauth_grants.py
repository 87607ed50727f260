"""MCP connections' OAuth grants in the session database (``eve.sessions.oauth_tokens``), on
SQLite and PostgreSQL: one row per connection, server URL and principal."""

from __future__ import annotations

import pytest

from eve.sessions.oauth_tokens import GrantRows, grant_key
from eve.sessions.store import SessionStore


@pytest.fixture
def store(either_store: SessionStore) -> SessionStore:
    return either_store


def rows(store: SessionStore, principal: str, url: str = "https://a.invalid/mcp") -> GrantRows:
    key = grant_key("agent/connections/crm.py", url)
    return GrantRows(store=store, key=key, principal=principal, connection="crm")


def test_a_grant_is_kept_per_principal_and_server(store: SessionStore) -> None:
    alice, bob = rows(store, "user:alice"), rows(store, "user:bob")
    assert alice.load() is None
    alice.save_client('{"client_id": "c1"}')
    alice.save_tokens('{"access_token": "a1"}', 100.0)
    alice.save_tokens('{"access_token": "a2"}', 200.0)  # a refresh replaces the tokens
    grant = alice.load()
    assert grant is not None
    assert (grant.tokens, grant.expires_at, grant.client_info) == (
        '{"access_token": "a2"}',
        200.0,
        '{"client_id": "c1"}',
    )
    assert bob.load() is None
    # the same connection pointed at another server is another grant
    assert rows(store, "user:alice", "https://b.invalid/mcp").load() is None


def test_two_writers_of_a_new_grant_leave_one_row(store: SessionStore) -> None:
    first, second = rows(store, "user:alice"), rows(store, "user:alice")
    first.save_client('{"client_id": "c1"}')
    second.save_client('{"client_id": "c2"}')
    grant = first.load()
    assert grant is not None and grant.client_info == '{"client_id": "c2"}'
