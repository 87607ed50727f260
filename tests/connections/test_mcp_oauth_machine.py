"""Machine-to-machine OAuth of an MCP connection against a real authorization server
(tests/connections/oauth_server.py): the client credentials grant (RFC 6749 §4.4) with a
client secret or a JWT the client signs (RFC 7523 §2.2), no person in the loop, the
token kept in the session database and redacted like a person's grant."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from eve._redact import redact
from eve.connections import define_mcp_connection, from_env, oauth
from eve.errors import MCPAuthorizationFailed
from eve.manifest import ConnectionEntry
from eve.sessions.store import SessionStore
from eve.sessions.tables import mcp_oauth
from tests.connections.oauth_person import Person
from tests.connections.oauth_server import AuthState
from tests.connections.oauth_turns import rows, turn
from tests.connections.servers import entry

SECRET = "robot-secret-never-shown"


def machine(state: AuthState, **options: Any) -> ConnectionEntry:
    auth = oauth(grant="client_credentials", client_id="robot", **options)
    return entry(
        define_mcp_connection(description="A protected server.", url=state.resource, auth=auth),
        name="vault",
    )


def _key_pair() -> tuple[str, str]:
    """A P-256 key pair as PEM (private PKCS#8, public SubjectPublicKeyInfo)."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public.decode()


def _register_key(state: AuthState, public_pem: str) -> None:
    state.clients["robot"] = {
        "client_id": "robot",
        "token_endpoint_auth_method": "private_key_jwt",
        "public_key": public_pem,
        "signing_alg": "ES256",
    }


async def test_a_client_secret_signs_in_with_no_person_and_the_token_is_kept_and_renewed(
    auth_server: AuthState, grant_store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth_server.clients["robot"] = {
        "client_id": "robot",
        "client_secret": SECRET,
        "token_endpoint_auth_method": "client_secret_basic",
    }
    monkeypatch.setenv("ROBOT_SECRET", SECRET)
    vault, person = machine(auth_server, client_secret=from_env("ROBOT_SECRET")), Person()
    async with turn(grant_store, person) as pool:
        # the server's token names the client itself as who signed in (RFC 6749 §4.4)
        assert (await pool.call(vault, "whoami", {})).text == "robot"
    assert person.seen == [] and auth_server.authorizations == 0
    assert auth_server.grants == ["client_credentials"]
    [(_, tokens, expires_at)] = rows(grant_store)
    assert tokens is not None and expires_at is not None
    # no refresh token came (RFC 6749 §4.4.3); the access token and the secret are redacted
    assert json.loads(tokens)["refresh_token"] is None
    [access] = auth_server.issued
    assert access in tokens
    assert access not in redact(f"echo {access}") and SECRET not in redact(f"echo {SECRET}")
    # another process uses the stored token; once expired, the client asks again itself
    async with turn(grant_store, Person()) as pool:
        await pool.call(vault, "whoami", {})
    assert auth_server.grants == ["client_credentials"]
    auth_server.expire_access_tokens()
    grant_store.run(lambda c: c.execute(sa.update(mcp_oauth).values(expires_at=1.0)))
    later = Person()
    async with turn(grant_store, later) as pool:
        assert (await pool.call(vault, "whoami", {})).text == "robot"
    assert later.seen == [] and auth_server.grants == ["client_credentials", "client_credentials"]


@pytest.mark.parametrize("source", ["env", "file"])
async def test_a_private_key_signs_the_client_assertion(
    auth_server: AuthState,
    grant_store: SessionStore,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    source: str,
) -> None:
    private, public = _key_pair()
    _register_key(auth_server, public)
    if source == "env":
        monkeypatch.setenv("ROBOT_KEY", private)
        vault = machine(auth_server, private_key=from_env("ROBOT_KEY"), signing_algorithm="ES256")
    else:
        (tmp_path / "robot.pem").write_text(private)
        vault = machine(
            auth_server, private_key_file=str(tmp_path / "robot.pem"), signing_algorithm="ES256"
        )
    async with turn(grant_store, Person()) as pool:
        assert (await pool.call(vault, "whoami", {})).text == "robot"
    # the server verified the JWT against the registered key (RFC 7523 §3)
    assert auth_server.grants == ["client_credentials"] and len(auth_server.assertions) == 1
    assert "PRIVATE KEY" not in redact(private)


async def test_a_key_the_server_does_not_know_is_invalid_client(
    auth_server: AuthState, grant_store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _register_key(auth_server, _key_pair()[1])
    monkeypatch.setenv("ROBOT_KEY", _key_pair()[0])
    vault = machine(auth_server, private_key=from_env("ROBOT_KEY"), signing_algorithm="ES256")
    async with turn(grant_store, Person()) as pool:
        with pytest.raises(MCPAuthorizationFailed, match="invalid_client"):
            await pool.list_tools(vault)
    assert auth_server.issued == []


@pytest.mark.parametrize(
    ("source", "says"),
    [("missing", "cannot be read"), ("garbage", "not an unencrypted PEM private key")],
)
async def test_an_unusable_private_key_is_a_named_error(
    auth_server: AuthState,
    grant_store: SessionStore,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    source: str,
    says: str,
) -> None:
    if source == "missing":
        vault = machine(auth_server, private_key_file=str(tmp_path / "absent.pem"))
    else:
        monkeypatch.setenv("ROBOT_KEY", "-----BEGIN PRIVATE KEY-----\nnot a key\n")
        vault = machine(auth_server, private_key=from_env("ROBOT_KEY"))
    async with turn(grant_store, Person()) as pool:
        with pytest.raises(MCPAuthorizationFailed, match=says) as raised:
            await pool.list_tools(vault)
    assert "not a key" not in str(raised.value)
    assert auth_server.grants == []
