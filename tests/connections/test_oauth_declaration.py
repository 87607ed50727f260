"""Declaring OAuth on a connection: ``oauth(...)`` checked where it is written, and compiled
into the manifest as names only (no token, no secret)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from eve.compiler import compile_agent
from eve.connections import define_mcp_connection, from_env, identity_provider, oauth
from eve.errors import AuthoringError
from eve.manifest import HttpServer, OAuthSettings
from tests.connections.connection_trees import app

SIGNED_IN = """
from eve.connections import define_mcp_connection, from_env, oauth

default = define_mcp_connection(
    description="Records.",
    url="https://crm.example.invalid/mcp",
    auth=oauth(scopes=["crm:read"], client_id="eve-crm", client_secret=from_env("CRM_SECRET")),
)
"""


AS = "https://auth.example.invalid"
IDP_TOKEN = "https://idp.example.invalid/token"
IDP = identity_provider(token_endpoint=IDP_TOKEN, client_id="eve", id_token=from_env("ID_TOKEN"))
ENTERPRISE = {"client_id": "eve-crm", "client_secret": from_env("CRM_SECRET")}
ASSERTED = """
from eve.connections import define_mcp_connection, from_env, identity_provider, oauth

default = define_mcp_connection(
    description="Records.",
    url="https://crm.example.invalid/mcp",
    auth=oauth(
        grant="identity_assertion",
        client_id="eve-crm",
        client_secret=from_env("CRM_SECRET"),
        issuer="https://auth.example.invalid",
        identity_provider=identity_provider(
            token_endpoint="https://idp.example.invalid/token",
            client_id="eve",
            client_secret=from_env("IDP_SECRET"),
            id_token_file="/run/secrets/idp/token",
        ),
    ),
)
"""


def compiled_oauth(tmp_path: Path, source: str) -> tuple[OAuthSettings, str]:
    """The OAuth settings the one connection ``source`` compiles to, and the manifest's JSON."""
    result = compile_agent(app(tmp_path, {"crm.py": source}))
    assert result.manifest is not None, result.diagnostics.items
    [crm] = result.manifest.nodes["__root__"].connections
    assert isinstance(crm.server, HttpServer) and crm.server.oauth is not None
    return crm.server.oauth, msgspec.json.encode(result.manifest).decode()


def test_an_identity_assertion_grant_is_recorded_by_name_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IDP_SECRET", "idp-s3cret-never-compiled")
    settings, manifest = compiled_oauth(tmp_path, ASSERTED)
    assert (settings.grant, settings.issuer) == ("identity_assertion", AS)
    idp = settings.identity_provider
    assert idp is not None and (idp.token_endpoint, idp.client_id) == (IDP_TOKEN, "eve")
    assert idp.client_secret is not None and idp.client_secret.env == "IDP_SECRET"
    assert (idp.id_token, idp.id_token_file) == (None, "/run/secrets/idp/token")
    assert "idp-s3cret-never-compiled" not in manifest


def test_the_manifest_records_the_sign_in_by_name_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRM_SECRET", "s3cret-never-compiled")
    settings, manifest = compiled_oauth(tmp_path, SIGNED_IN)
    assert (settings.scopes, settings.client_id, settings.authorization_timeout_seconds) == (
        ["crm:read"],
        "eve-crm",
        300.0,
    )
    assert settings.client_secret is not None and settings.client_secret.env == "CRM_SECRET"
    assert "s3cret-never-compiled" not in manifest


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: oauth(scopes="crm:read"), "a list of scope names"),  # type: ignore[arg-type]
        (lambda: oauth(client_secret="literal"), "from_env"),  # type: ignore[arg-type]
        (lambda: oauth(client_secret=from_env("S")), "needs the client_id"),
        (lambda: oauth(redirect_url="myapp:/cb"), "http(s) URL"),
        (lambda: oauth(authorization_timeout_seconds=0), "positive"),
        (lambda: oauth(client_metadata_url="http://x.invalid/c.json"), "https URL with a path"),
        (lambda: oauth(client_metadata_url="https://x.invalid/"), "https URL with a path"),
        (lambda: oauth(grant="client_credentials"), "needs the client_id"),
        (lambda: oauth(grant="client_credentials", client_id="c"), "one way"),
        (
            lambda: oauth(
                grant="client_credentials",
                client_id="c",
                client_secret=from_env("S"),
                private_key_file="key.pem",
            ),
            "one way",
        ),
        (
            lambda: oauth(grant="client_credentials", client_id="c", private_key="-----BEGIN"),  # type: ignore[arg-type]
            "from_env",
        ),
        (
            lambda: oauth(
                grant="client_credentials",
                client_id="c",
                client_secret=from_env("S"),
                redirect_url="http://127.0.0.1:1/cb",
            ),
            "sends no one to sign in",
        ),
        (lambda: oauth(private_key_file="key.pem"), "grant='client_credentials'"),
        (lambda: oauth(grant="identity_assertion", issuer=AS), "needs identity_provider"),
        (
            lambda: oauth(grant="identity_assertion", **ENTERPRISE, identity_provider=IDP),  # type: ignore[arg-type]
            "needs identity_provider",
        ),
        (
            lambda: oauth(
                grant="identity_assertion",
                **ENTERPRISE,  # type: ignore[arg-type]
                issuer=AS,
                identity_provider=IDP,
                redirect_url="http://127.0.0.1:1/cb",
            ),
            "sends no one to sign in",
        ),
        (lambda: oauth(identity_provider=IDP), "belongs to grant='identity_assertion'"),
        (lambda: identity_provider(token_endpoint="idp/token", client_id="e"), "http(s) URL"),
        (
            lambda: identity_provider(token_endpoint=IDP_TOKEN, client_id="e"),
            "one ID token",
        ),
        (
            lambda: identity_provider(
                token_endpoint=IDP_TOKEN,
                client_id="e",
                id_token=from_env("T"),
                id_token_file="/run/token",
            ),
            "one ID token",
        ),
        (
            lambda: identity_provider(token_endpoint=IDP_TOKEN, client_id="e", id_token="ey.."),  # type: ignore[arg-type]
            "from_env",
        ),
        (lambda: oauth(grant="password"), "not 'password'"),  # type: ignore[arg-type]
        (lambda: oauth(issuer="auth.example.invalid"), "http(s) URL"),
        (
            lambda: define_mcp_connection(description="x", command=["server"], auth=oauth()),
            "Streamable HTTP",
        ),
        (
            lambda: define_mcp_connection(
                description="x", url="https://x.invalid/mcp", auth=oauth(), get_token=lambda: "t"
            ),
            "not both",
        ),
        (
            lambda: define_mcp_connection(
                description="x",
                url="https://x.invalid/mcp",
                auth="oauth",  # type: ignore[arg-type]
            ),
            "oauth(...)",
        ),
    ],
)
def test_an_impossible_declaration_is_an_authoring_error(make: object, says: str) -> None:
    with pytest.raises(AuthoringError, match=says.replace("(", r"\(").replace(")", r"\)")):
        make()  # type: ignore[operator]
