"""Machine-to-machine OAuth for a connection: the client credentials grant (RFC 6749 §4.4),
no person in the loop, through the SDK's extension providers.

The declared client authenticates at the token endpoint with its secret (HTTP Basic,
RFC 6749 §2.3.1) or with a JWT it signs with its private key (RFC 7523 §2.2, the
audience being the authorization server's issuer). Discovery (RFC 9728, RFC 8414) is the
SDK's as for a person's grant; a token that expires or is refused is replaced by asking
again, since the grant has no refresh token (RFC 6749 §4.4.3). The secret and the key
join the redaction set when read; the tokens go to the same storage as a person's grant.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from cryptography.hazmat.primitives.serialization import load_pem_private_key
from mcp.client.auth import TokenStorage
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.shared.exceptions import MCPDeprecationWarning

from eve._redact import add_secret
from eve.connections.oauth_flow import ExpiryHolder, FailureHolder, NamedFailures
from eve.connections.transports import env_secret
from eve.errors import MCPAuthorizationFailed
from eve.manifest import HttpServer, OAuthSettings


class _SecretProvider(NamedFailures, ClientCredentialsOAuthProvider):
    pass


class _SignedJWTProvider(NamedFailures, PrivateKeyJWTOAuthProvider):
    pass


def machine_provider(
    link: FailureHolder, settings: OAuthSettings, storage: TokenStorage, expiry: ExpiryHolder
) -> NamedFailures:
    """The SDK provider of a ``grant="client_credentials"`` connection."""
    server = link.entry.server
    assert isinstance(server, HttpServer)
    assert settings.client_id is not None, "oauth() refuses client credentials without one"
    scope = " ".join(settings.scopes) if settings.scopes else None
    provider: NamedFailures
    with warnings.catch_warnings():
        # without an issuer the SDK warns that the MCP server's metadata picks where the
        # credentials go; that is what the declaration asked for (docs/connections.md)
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if settings.client_secret is not None:
            secret = env_secret(
                settings.client_secret, connection=link.entry.name, what="oauth client_secret"
            )
            provider = _SecretProvider(
                server.url,
                storage,
                client_id=settings.client_id,
                client_secret=secret,
                scope=scope,
                issuer=settings.issuer,
            )
        else:
            signing = SignedJWTParameters(
                # RFC 7523 §3: iss and sub are the client's id when it authenticates itself
                issuer=settings.client_id,
                subject=settings.client_id,
                signing_key=_private_key(link, settings),
                signing_algorithm=settings.signing_algorithm,
            )
            provider = _SignedJWTProvider(
                server.url,
                storage,
                client_id=settings.client_id,
                assertion_provider=signing.create_assertion_provider(),
                scope=scope,
                issuer=settings.issuer,
            )
    provider.link = link
    provider.expiry = expiry
    return provider


def _private_key(link: FailureHolder, settings: OAuthSettings) -> str:
    """The PEM key from the environment or its file, checked now so that a bad key is a
    named error when connecting rather than a failure inside the token request."""
    name = link.entry.name
    if settings.private_key is not None:
        pem = env_secret(settings.private_key, connection=name, what="oauth private_key")
    else:
        assert settings.private_key_file is not None, "oauth() requires one of the two"
        try:
            pem = Path(settings.private_key_file).read_text()
        except OSError as error:
            raise MCPAuthorizationFailed(
                f"connection {name!r}: the OAuth private key file "
                f"{settings.private_key_file!r} cannot be read: {error.strerror}",
                connection=name,
            ) from None
        add_secret(pem)
    try:
        load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        # the message names the variable or file, never a part of the key
        where = settings.private_key.env if settings.private_key else settings.private_key_file
        raise MCPAuthorizationFailed(
            f"connection {name!r}: the OAuth private key from {where!r} is not an "
            "unencrypted PEM private key",
            connection=name,
        ) from None
    return pem
