"""OAuth 2.1 sign-in of an MCP connection against a real authorization server (tests/connections/
oauth_server.py): discovery, registration, PKCE, refresh, step-up, and grants per principal
kept in the session database."""

from __future__ import annotations

import base64
import hashlib
import logging
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
import sqlalchemy as sa

from eve.auth.principal import Principal
from eve.connections import authorization, define_mcp_connection, from_env, oauth
from eve.connections.pool import ConnectionPool
from eve.context import EveContext, use_context
from eve.errors import (
    MCPAuthorizationFailed,
    MCPAuthorizationRequired,
    MCPUnauthorized,
)
from eve.manifest import ConnectionEntry
from eve.sessions.store import SessionStore
from eve.sessions.tables import mcp_oauth
from tests.connections.oauth_person import Person
from tests.connections.oauth_server import ADMIN, READ, AuthState
from tests.connections.oauth_turns import rows, turn
from tests.connections.servers import entry, free_port


def signing_in(
    state: AuthState, *, timeout: float = 20.0, server_seconds: float = 10.0, **options: object
) -> ConnectionEntry:
    """The protected server's connection; ``server_seconds`` bounds its connects and calls."""
    redirect = f"http://127.0.0.1:{free_port()}{authorization.CALLBACK_PATH}"
    auth = oauth(redirect_url=redirect, authorization_timeout_seconds=timeout, **options)  # type: ignore[arg-type]
    connection = define_mcp_connection(
        description="A protected server.",
        url=state.resource,
        auth=auth,
        connect_timeout_seconds=server_seconds,
        call_timeout_seconds=server_seconds,
    )
    return entry(connection, name="vault")


async def test_a_first_sign_in_discovers_registers_and_keeps_the_grant_for_the_next_process(
    auth_server: AuthState, grant_store: SessionStore
) -> None:
    vault, person = signing_in(auth_server), Person()
    async with turn(grant_store, person) as pool:
        tools = await pool.list_tools(vault)
        assert {tool.name for tool in tools} == {"whoami", "admin"}
        assert (await pool.call(vault, "whoami", {})).text == "alice"
    # one link shown, followed once; eve registered itself (RFC 7591) and used the code grant
    assert [data.connection for data in person.seen] == ["vault"]
    assert person.answers == [200]
    assert len(auth_server.clients) == 1 and auth_server.grants == ["authorization_code"]
    assert person.seen[0].url.startswith(f"{auth_server.issuer}/authorize?")
    assert "code_challenge_method=S256" in person.seen[0].url
    # the grant is in the session database, for this principal
    [(principal, tokens, expires_at)] = rows(grant_store)
    assert principal == "user:alice" and tokens is not None and expires_at is not None
    # another process reads it: no sign-in, no registration
    again = Person()
    async with turn(grant_store, again) as pool:
        assert (await pool.call(vault, "whoami", {})).text == "alice"
    assert again.seen == [] and len(auth_server.clients) == 1 and auth_server.authorizations == 1


async def test_an_expired_token_is_refreshed_without_asking_the_person(
    auth_server: AuthState, grant_store: SessionStore
) -> None:
    vault, person = signing_in(auth_server), Person()
    async with turn(grant_store, person) as pool:
        await pool.list_tools(vault)
    auth_server.expire_access_tokens()
    grant_store.run(lambda c: c.execute(sa.update(mcp_oauth).values(expires_at=1.0)))
    later = Person()
    async with turn(grant_store, later) as pool:
        assert (await pool.call(vault, "whoami", {})).text == "alice"
    assert later.seen == [] and auth_server.grants == ["authorization_code", "refresh_token"]
    [(_, _, expires_at)] = rows(grant_store)
    assert expires_at is not None and expires_at > 1.0


async def test_a_revoked_refresh_token_asks_the_person_again(
    auth_server: AuthState, grant_store: SessionStore
) -> None:
    vault = signing_in(auth_server)
    async with turn(grant_store, Person()) as pool:
        await pool.list_tools(vault)
    auth_server.expire_access_tokens()
    auth_server.revoke_refresh_tokens()
    grant_store.run(lambda c: c.execute(sa.update(mcp_oauth).values(expires_at=1.0)))
    again = Person()
    async with turn(grant_store, again) as pool:
        assert (await pool.call(vault, "whoami", {})).text == "alice"
    # the refresh got invalid_grant (RFC 6749 §5.2), so a new authorization.required
    assert len(again.seen) == 1 and auth_server.authorizations == 2
    assert auth_server.grants == ["authorization_code", "refresh_token", "authorization_code"]


async def test_each_principal_signs_in_for_itself(
    auth_server: AuthState, grant_store: SessionStore
) -> None:
    vault = signing_in(auth_server)
    async with turn(grant_store, Person(), "alice") as pool:
        assert (await pool.call(vault, "whoami", {})).text == "alice"
        auth_server.subject = "bob"
        bob = Person()
        bob_turn = EveContext(session_id="s", principal=Principal(id="bob", kind="user"))
        with use_context(bob_turn), authorization.lent(notify=bob.notify):
            assert (await pool.call(vault, "whoami", {})).text == "bob"
        # alice's session goes on with alice's token
        assert (await pool.call(vault, "whoami", {})).text == "alice"
    assert len(bob.seen) == 1
    assert sorted(principal for principal, _, _ in rows(grant_store)) == ["user:alice", "user:bob"]


async def test_a_403_insufficient_scope_signs_in_again_for_the_wider_scope(
    auth_server: AuthState, grant_store: SessionStore
) -> None:
    vault, person = signing_in(auth_server), Person()
    async with turn(grant_store, person) as pool:
        assert (await pool.call(vault, "whoami", {})).text == "alice"
        assert (await pool.call(vault, "admin", {})).text == "admin done"
    # the step-up asked for the challenge's scopes (RFC 6750 §3.1, MCP scope challenges)
    assert len(person.seen) == 2
    assert parse_qs(urlparse(person.seen[1].url).query)["scope"] == [f"{READ} {ADMIN}"]


async def test_a_person_signing_in_stops_the_connect_and_the_call_clocks(
    auth_server: AuthState, grant_store: SessionStore
) -> None:
    # the person takes longer than the server's timeouts: connect_timeout_seconds and
    # call_timeout_seconds measure the server, and stand still while the person signs in
    vault, person = signing_in(auth_server, server_seconds=1.0), Person(delay=1.5)
    async with turn(grant_store, person) as pool:
        # signed in while connecting (the first request is refused with a 401)
        assert (await pool.call(vault, "whoami", {})).text == "alice"
        # and during a call (its 403 asks for a wider scope)
        assert (await pool.call(vault, "admin", {})).text == "admin done"
    assert len(person.seen) == 2 and person.answers == [200, 200]


async def test_a_sign_in_begun_with_the_connect_time_nearly_spent_can_succeed(
    auth_server: AuthState, grant_store: SessionStore
) -> None:
    # the registration before the sign-in takes about half the connect's 2.5 s, and the
    # token request after it more than what can be left (1.4 > 2.5 - 1.2): the request the
    # server refused is sent again after the sign-in with the whole time, so the person's
    # sign-in is not thrown away. Each side keeps a margin of over a second for the rest of
    # the connect, so a loaded machine does not decide the outcome.
    auth_server.register_seconds, auth_server.token_seconds = 1.2, 1.4
    vault, person = signing_in(auth_server, server_seconds=2.5), Person()
    async with turn(grant_store, person) as pool:
        assert (await pool.call(vault, "whoami", {})).text == "alice"
    assert len(person.seen) == 1 and person.answers == [200]


async def test_no_sign_in_within_the_timeout_is_a_named_error(
    auth_server: AuthState, grant_store: SessionStore
) -> None:
    vault, person = signing_in(auth_server, timeout=0.5), Person(signs_in=False)
    async with turn(grant_store, person) as pool:
        with pytest.raises(MCPAuthorizationRequired, match=r"no one did within 0\.5s"):
            await pool.list_tools(vault)
    assert len(person.seen) == 1 and rows(grant_store) != []  # the registration is kept


async def test_a_refused_sign_in_is_a_named_error(
    auth_server: AuthState, grant_store: SessionStore
) -> None:
    vault = signing_in(auth_server)

    class Refuses(Person):
        async def notify(self, data: object) -> None:
            # the authorization server's error redirect (RFC 6749 §4.1.2.1)
            state = str(data.url).split("state=")[1].split("&")[0]  # type: ignore[attr-defined]
            authorization.complete(
                authorization.Callback(state=state, error="access_denied", error_description="no")
            )

    async with turn(grant_store, Refuses()) as pool:
        with pytest.raises(MCPAuthorizationFailed, match="access_denied"):
            await pool.list_tools(vault)


async def test_a_wrong_client_secret_is_invalid_client(
    auth_server: AuthState, grant_store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth_server.clients["known"] = {
        "client_id": "known",
        "client_secret": "right",
        "redirect_uris": [],
        "token_endpoint_auth_method": "client_secret_basic",
    }
    monkeypatch.setenv("VAULT_SECRET", "wrong")
    vault = signing_in(auth_server, client_id="known", client_secret=from_env("VAULT_SECRET"))
    auth_server.clients["known"]["redirect_uris"] = [vault.server.oauth.redirect_url]  # type: ignore[union-attr]
    async with turn(grant_store, Person()) as pool:
        with pytest.raises(MCPAuthorizationFailed, match="invalid_client"):
            await pool.list_tools(vault)
    assert auth_server.clients.keys() == {"known"}  # a declared client is never registered anew


async def test_a_server_that_needs_auth_with_none_declared_says_what_to_declare(
    auth_server: AuthState,
) -> None:
    plain = entry(define_mcp_connection(description="Unprotected?", url=auth_server.resource))
    pool = ConnectionPool()
    try:
        with pytest.raises(MCPUnauthorized) as raised:
            await pool.list_tools(plain)
    finally:
        await pool.close()
    error = raised.value
    assert error.status == 401 and error.www_authenticate is not None
    assert (
        "resource_metadata=" in error.www_authenticate
        and 'scope="mcp:read"' in error.www_authenticate
    )
    assert "auth=oauth()" in str(error) and "HTTP 401" in str(error)


async def test_tokens_never_reach_the_logs(
    auth_server: AuthState, grant_store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    vault = signing_in(auth_server)
    async with turn(grant_store, Person()) as pool:
        await pool.call(vault, "whoami", {})
    assert auth_server.issued and not any(token in caplog.text for token in auth_server.issued)


def test_the_test_authorization_server_checks_pkce(auth_server: AuthState) -> None:
    """The rule the sign-in tests lean on (RFC 7636 §4.6): a code is exchanged only with the
    verifier whose S256 is its challenge, and only once (RFC 6749 §4.1.2)."""
    verifier = "v" * 64
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    redirect = "http://127.0.0.1:1/cb"
    with httpx.Client(base_url=auth_server.issuer) as http:
        client = http.post(
            "/register", json={"redirect_uris": [redirect], "token_endpoint_auth_method": "none"}
        ).json()["client_id"]

        def code() -> str:
            authorized = http.get(
                "/authorize",
                params={
                    "client_id": client,
                    "redirect_uri": redirect,
                    "response_type": "code",
                    "state": "s",
                    "code_challenge": challenge.rstrip(b"=").decode(),
                    "code_challenge_method": "S256",
                    "resource": auth_server.resource,
                },
            )
            return parse_qs(urlparse(authorized.headers["location"]).query)["code"][0]

        def exchange(code: str, verifier: str) -> httpx.Response:
            form = {
                "grant_type": "authorization_code",
                "code": code,
                "client_id": client,
                "redirect_uri": redirect,
                "code_verifier": verifier,
            }
            return http.post("/token", data=form)

        wrong = exchange(code(), "w" * 64)
        first = code()
        right, again = exchange(first, verifier), exchange(first, verifier)
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    assert right.status_code == 200 and right.json()["token_type"] == "Bearer"
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
