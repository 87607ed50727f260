"""Enterprise-managed authorization for a connection (SEP-990, cross-app access): an identity
assertion grant instead of a person's sign-in.

Two legs. First eve exchanges an ID token issued to it by the enterprise identity provider
for an identity assertion authorization grant (ID-JAG) at the IdP's token endpoint (RFC 8693
token exchange: ``subject_token_type`` id_token, ``requested_token_type`` id-jag, the
authorization server as ``audience`` and the MCP server as ``resource``). Then it presents
the ID-JAG to the MCP authorization server with the JWT bearer grant (RFC 7523 §2.1) as its
declared, confidential client, and gets the access token. The second leg is the SDK's
``IdentityAssertionOAuthProvider``, which takes the authorization server's issuer as
configuration (the MCP server is never asked where to send the ID-JAG and the client
secret); the first is this module's, which the SDK leaves to the caller.

The ID token comes from the environment, or from a file read at each exchange (a platform
that writes and renews one, as workload identity does). It, the ID-JAG and the secrets join
the redaction set when read; the access token goes to the grant's storage as any other.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
from mcp.client.auth import TokenStorage
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

from eve._redact import add_secret
from eve._tls import shared_tls_context
from eve.connections.oauth_flow import FailureHolder, KeepsFailures
from eve.connections.transports import env_secret
from eve.errors import MCPAuthorizationFailed
from eve.manifest import HttpServer, IdentityProviderSettings, OAuthSettings

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
#: how long the IdP may take to answer the exchange
_EXCHANGE_SECONDS = 30.0


class _AssertionProvider(KeepsFailures, IdentityAssertionOAuthProvider):
    pass


def assertion_provider(
    link: FailureHolder, settings: OAuthSettings, storage: TokenStorage
) -> KeepsFailures:
    """The SDK provider of a ``grant="identity_assertion"`` connection."""
    server, idp = link.entry.server, settings.identity_provider
    assert isinstance(server, HttpServer)
    assert idp is not None and settings.client_id is not None and settings.issuer is not None
    assert settings.client_secret is not None, "oauth() refuses the grant without them"
    name = link.entry.name
    secret = env_secret(settings.client_secret, connection=name, what="oauth client_secret")
    exchange = _Exchange(name, idp, settings.scopes)
    provider = _AssertionProvider(
        server.url,
        storage,
        client_id=settings.client_id,
        client_secret=secret,
        issuer=settings.issuer,
        assertion_provider=exchange.id_jag,
        scope=" ".join(settings.scopes) if settings.scopes else None,
        # RFC 6749 §2.3.1: every authorization server takes HTTP Basic
        token_endpoint_auth_method="client_secret_basic",
    )
    provider.link = link
    return provider


class _Exchange:
    """The first leg: the ID token exchanged for an ID-JAG at the identity provider."""

    def __init__(
        self, connection: str, idp: IdentityProviderSettings, scopes: list[str] | None
    ) -> None:
        self.connection = connection
        self.idp = idp
        self.scopes = scopes

    async def id_jag(self, audience: str, resource: str) -> str:
        """The SDK's ``assertion_provider``: an ID-JAG for ``audience`` (the authorization
        server's issuer) and ``resource`` (the MCP server)."""
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "audience": audience,
            "resource": resource,
            "subject_token": self._id_token(),
            "subject_token_type": ID_TOKEN,
        }
        if self.scopes:
            form["scope"] = " ".join(self.scopes)
        headers = {"Accept": "application/json"}
        secret = self._client_secret()
        if secret is None:
            form["client_id"] = self.idp.client_id  # a public client names itself
        else:
            # RFC 6749 §2.3.1: each part form-urlencoded, then HTTP Basic
            pair = f"{quote(self.idp.client_id, safe='')}:{quote(secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        try:
            verify = shared_tls_context("httpx2")
            async with httpx2.AsyncClient(timeout=_EXCHANGE_SECONDS, verify=verify) as client:
                answer = await client.post(self.idp.token_endpoint, data=form, headers=headers)
        except httpx2.HTTPError as error:
            raise self._failed(f"could not reach it ({type(error).__name__})") from None
        return self._issued(answer)

    def _issued(self, answer: httpx2.Response) -> str:
        body = _json(answer)
        if answer.status_code != 200:
            # RFC 6749 §5.2 (RFC 8693 §2.2.2): error and error_description
            error = body.get("error", "no error code")
            detail = f": {body['error_description']}" if body.get("error_description") else ""
            raise self._failed(
                f"it refused the token exchange ({answer.status_code} {error}{detail})"
            )
        token, kind = body.get("access_token"), body.get("issued_token_type")
        if not isinstance(token, str) or not token or kind != ID_JAG:
            # RFC 8693 §2.2.1: the issued token is in access_token, its type said
            raise self._failed(f"it answered the token exchange with no ID-JAG (issued {kind!r})")
        add_secret(token)
        return token

    def _id_token(self) -> str:
        idp, name = self.idp, self.connection
        if idp.id_token is not None:
            return env_secret(
                idp.id_token, connection=name, what="the identity provider's ID token"
            )
        assert idp.id_token_file is not None, "identity_provider() requires one of the two"
        try:
            # read at each exchange: the platform that writes it renews it
            token = Path(idp.id_token_file).read_text().strip()
        except OSError as error:
            raise self._failed(
                f"the ID token file {idp.id_token_file!r} cannot be read: {error.strerror}"
            ) from None
        add_secret(token)
        return token

    def _client_secret(self) -> str | None:
        declared = self.idp.client_secret
        if declared is None:
            return None
        return env_secret(
            declared, connection=self.connection, what="identity provider client_secret"
        )

    def _failed(self, why: str) -> MCPAuthorizationFailed:
        return MCPAuthorizationFailed(
            f"connection {self.connection!r}: the identity provider at "
            f"{self.idp.token_endpoint} gave no identity assertion grant: {why}",
            connection=self.connection,
        )


def _json(answer: httpx2.Response) -> dict[str, Any]:
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
