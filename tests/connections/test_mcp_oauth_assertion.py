"""Enterprise-managed authorization of an MCP connection (SEP-990) against a real
authorization server and identity provider (tests/connections/oauth_server.py): the ID token
exchanged for an ID-JAG (RFC 8693), the ID-JAG presented with the JWT bearer grant (RFC
7523), no person in the loop, and the tokens kept and redacted like any grant's."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from eve._redact import redact
from eve.connections import define_mcp_connection, from_env, identity_provider, oauth
from eve.errors import MCPAuthorizationFailed
from eve.manifest import ConnectionEntry
from eve.sessions.store import SessionStore
from eve.sessions.tables import mcp_oauth
from tests.connections.oauth_person import Person
from tests.connections.oauth_server import JWT_BEARER_GRANT, AuthState
from tests.connections.oauth_turns import rows, turn
from tests.connections.servers import entry

SECRET = "enterprise-secret-never-shown"


def enterprise(
    state: AuthState, monkeypatch: pytest.MonkeyPatch, **token: object
) -> ConnectionEntry:
    """The connection signing in as the AS's client ``enterprise`` with an ID-JAG from the
    IdP; ``token`` says where the ID token is read from."""
    state.clients["enterprise"] = {
        "client_id": "enterprise",
        "client_secret": SECRET,
        "token_endpoint_auth_method": "client_secret_basic",
    }
    monkeypatch.setenv("ENTERPRISE_SECRET", SECRET)
    auth = oauth(
        grant="identity_assertion",
        client_id="enterprise",
        client_secret=from_env("ENTERPRISE_SECRET"),
        issuer=state.issuer,
        identity_provider=identity_provider(
            token_endpoint=f"{state.idp}/token",
            client_id=state.idp_client,
            **token,  # type: ignore[arg-type]
        ),
    )
    connection = define_mcp_connection(description="CRM.", url=state.resource, auth=auth)
    return entry(connection, name="crm")


async def test_the_idps_id_token_signs_in_as_its_subject_with_no_person(
    auth_server: AuthState, grant_store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    id_token = auth_server.id_token("carol")
    monkeypatch.setenv("IDP_ID_TOKEN", id_token)
    crm, person = enterprise(auth_server, monkeypatch, id_token=from_env("IDP_ID_TOKEN")), Person()
    async with turn(grant_store, person) as pool:
        # the IdP's subject is who the MCP server sees
        assert (await pool.call(crm, "whoami", {})).text == "carol"
    assert person.seen == [] and auth_server.authorizations == 0
    assert auth_server.exchanges == 1 and auth_server.grants == [JWT_BEARER_GRANT]
    [(_, tokens, _)] = rows(grant_store)
    assert tokens is not None and auth_server.issued[-1] in tokens
    # the ID token, the ID-JAG, the access token and the secret are secrets from now on
    for secret in (*auth_server.issued, SECRET):
        assert secret not in redact(f"echo {secret}")
    # another process uses the stored token: no exchange, no grant
    async with turn(grant_store, Person()) as pool:
        assert (await pool.call(crm, "whoami", {})).text == "carol"
    assert auth_server.exchanges == 1 and len(auth_server.grants) == 1


async def test_an_id_token_file_is_read_again_at_each_exchange(
    auth_server: AuthState,
    grant_store: SessionStore,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "id-token"
    token_file.write_text(auth_server.id_token("dave") + "\n")
    crm = enterprise(auth_server, monkeypatch, id_token_file=str(token_file))
    async with turn(grant_store, Person()) as pool:
        assert (await pool.call(crm, "whoami", {})).text == "dave"
    # the platform renewed the file (here for another subject), and the access token expired
    token_file.write_text(auth_server.id_token("erin"))
    auth_server.expire_access_tokens()
    grant_store.run(lambda c: c.execute(sa.update(mcp_oauth).values(expires_at=1.0)))
    async with turn(grant_store, Person()) as pool:
        assert (await pool.call(crm, "whoami", {})).text == "erin"
    assert auth_server.exchanges == 2


@pytest.mark.parametrize("problem", ["expired", "missing file"])
async def test_an_id_token_the_idp_cannot_take_is_a_named_error(
    auth_server: AuthState,
    grant_store: SessionStore,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    problem: str,
) -> None:
    if problem == "expired":
        expired = auth_server.id_token("carol", seconds=-60)
        monkeypatch.setenv("IDP_ID_TOKEN", expired)
        crm = enterprise(auth_server, monkeypatch, id_token=from_env("IDP_ID_TOKEN"))
        says = r"refused the token exchange \(400 invalid_grant: ID token rejected"
    else:
        crm = enterprise(auth_server, monkeypatch, id_token_file=str(tmp_path / "absent"))
        says = "ID token file .* cannot be read"
    async with turn(grant_store, Person()) as pool:
        with pytest.raises(MCPAuthorizationFailed, match=says) as raised:
            await pool.list_tools(crm)
    assert not any(token in str(raised.value) for token in auth_server.issued)
    assert auth_server.exchanges == 0 and auth_server.grants == []
