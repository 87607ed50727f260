"""``oauth(...)``: a Streamable HTTP connection that signs in with OAuth 2.1, as MCP specifies.

The declaration holds no secret: a pre-registered client's secret names an environment
variable (``from_env``), and tokens are never declared at all: eve gets them at run time
(discovery, registration, the person's sign-in) and keeps them in the session database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlparse

from eve.authoring.env_values import EnvValue
from eve.errors import AuthoringError

Grant = Literal["authorization_code", "client_credentials", "identity_assertion"]


@dataclass(frozen=True, kw_only=True)
class IdentityProvider:
    """The enterprise identity provider of an ``identity_assertion`` grant (SEP-990): where
    eve exchanges an ID token for an identity assertion grant (ID-JAG, RFC 8693)."""

    #: the IdP's token endpoint (the token exchange)
    token_endpoint: str
    #: eve's client at the IdP
    client_id: str
    client_secret: EnvValue | None = None
    #: the ID token presented, from the environment or a file read at each exchange
    id_token: EnvValue | None = None
    id_token_file: str | None = None


def identity_provider(
    *,
    token_endpoint: str,
    client_id: str,
    client_secret: EnvValue | None = None,
    id_token: EnvValue | None = None,
    id_token_file: str | None = None,
) -> IdentityProvider:
    """The identity provider of ``oauth(grant="identity_assertion", ...)``: eve presents the
    ID token it issued (``id_token=from_env(...)``, or ``id_token_file=...`` for a token a
    platform writes and renews, read at each exchange) at ``token_endpoint`` as eve's
    ``client_id`` (with ``client_secret=from_env(...)`` when the IdP wants one)."""
    if not token_endpoint.startswith(("http://", "https://")):
        raise AuthoringError(
            f"identity_provider(token_endpoint=...) must be an http(s) URL, not {token_endpoint!r}"
        )
    for name, value in (("client_secret", client_secret), ("id_token", id_token)):
        if value is not None and not isinstance(value, EnvValue):
            raise AuthoringError(
                f"identity_provider({name}=...) must come from from_env('VARIABLE'): a literal "
                "one would be written into .eve/ and the repository"
            )
    if (id_token is None) == (id_token_file is None):
        raise AuthoringError(
            "identity_provider() presents one ID token: id_token=from_env(...) or id_token_file=..."
        )
    return IdentityProvider(
        token_endpoint=token_endpoint,
        client_id=client_id,
        client_secret=client_secret,
        id_token=id_token,
        id_token_file=id_token_file,
    )


@dataclass(frozen=True, kw_only=True)
class OAuth:
    """How a connection signs in: discovery, then a declared or registered client, PKCE."""

    #: the scopes asked for first (None: what the server's challenge or metadata names)
    scopes: tuple[str, ...] | None = None
    #: a client registered beforehand; None registers one dynamically (RFC 7591)
    client_id: str | None = None
    client_secret: EnvValue | None = None
    #: where the authorization server sends the person back (None: eve's callback route
    #: at ``EVE_OAUTH_REDIRECT_URL``, else the loopback default)
    redirect_url: str | None = None
    client_name: str = "eve"
    #: an HTTPS URL where this client's metadata document is published (SEP-991): used as
    #: the client id where the authorization server takes such documents, instead of
    #: registering
    client_metadata_url: str | None = None
    #: how long a turn waits for the person to sign in before the call fails
    authorization_timeout_seconds: float = 300.0
    #: ``client_credentials``: the client signs in as itself, no person (RFC 6749 §4.4);
    #: ``identity_assertion``: with an ID-JAG from the enterprise IdP (SEP-990)
    grant: Grant = "authorization_code"
    #: a PEM private key signing the client's JWT (RFC 7523 §2.2), from the environment
    #: or a file, instead of a client secret
    private_key: EnvValue | None = None
    private_key_file: str | None = None
    signing_algorithm: str = "RS256"
    #: the issuer of the authorization server the client credentials belong to
    issuer: str | None = None
    #: where an ``identity_assertion`` grant gets its ID-JAG
    identity_provider: IdentityProvider | None = None


def oauth(
    *,
    scopes: Sequence[str] | None = None,
    client_id: str | None = None,
    client_secret: EnvValue | None = None,
    redirect_url: str | None = None,
    client_name: str = "eve",
    client_metadata_url: str | None = None,
    authorization_timeout_seconds: float = 300.0,
    grant: Grant = "authorization_code",
    private_key: EnvValue | None = None,
    private_key_file: str | None = None,
    signing_algorithm: str = "RS256",
    issuer: str | None = None,
    identity_provider: IdentityProvider | None = None,
) -> OAuth:
    """Sign in to the server with OAuth 2.1 (``define_mcp_connection(url=..., auth=oauth())``).

    With no ``client_id`` eve registers itself with the authorization server (dynamic client
    registration); give ``client_id`` (and ``client_secret=from_env(...)`` for a confidential
    client) for one registered beforehand. ``scopes`` are asked for at the first sign-in;
    a server's challenge asking for more is followed (step-up). ``client_metadata_url``
    names a client ID metadata document, used instead of registering where the
    authorization server supports them.

    ``grant="client_credentials"`` signs in with no person in the loop (machine to machine,
    RFC 6749 §4.4): the declared ``client_id`` authenticates with ``client_secret=from_env(...)``
    (HTTP Basic) or with a JWT it signs (RFC 7523 §2.2) with ``private_key=from_env(...)`` or
    ``private_key_file=...`` (a PEM key; ``signing_algorithm`` as the server registered it).
    ``issuer`` names the authorization server those credentials belong to: they are then
    sent to no other.

    ``grant="identity_assertion"`` is enterprise-managed authorization (SEP-990, cross-app
    access): eve exchanges an ID token at the ``identity_provider`` for an identity
    assertion grant (RFC 8693) and presents it with the JWT bearer grant (RFC 7523) to the
    authorization server ``issuer`` (required: the MCP server is not asked which one) as
    the declared ``client_id`` with ``client_secret=from_env(...)``."""
    if isinstance(scopes, str):
        raise AuthoringError("oauth(scopes=...) is a list of scope names, not one string")
    if client_secret is not None and not isinstance(client_secret, EnvValue):
        raise AuthoringError(
            "oauth(client_secret=...) must come from from_env('VARIABLE'): a literal secret "
            "would be written into .eve/ and the repository"
        )
    if client_secret is not None and client_id is None:
        raise AuthoringError("oauth(client_secret=...) needs the client_id it belongs to")
    if redirect_url is not None and not redirect_url.startswith(("http://", "https://")):
        raise AuthoringError(
            f"oauth(redirect_url=...) must be an http(s) URL, not {redirect_url!r}"
        )
    if client_metadata_url is not None and (
        not client_metadata_url.startswith("https://")
        or urlparse(client_metadata_url).path in ("", "/")
    ):
        raise AuthoringError(
            "oauth(client_metadata_url=...) must be an https URL with a path (the client's "
            f"metadata document), not {client_metadata_url!r}"
        )
    if not authorization_timeout_seconds > 0:
        raise AuthoringError("oauth(authorization_timeout_seconds=...) must be positive")
    _check_grant(
        grant,
        client_id=client_id,
        has_secret=client_secret is not None,
        private_key=private_key,
        private_key_file=private_key_file,
        person_only=redirect_url is not None or client_metadata_url is not None,
    )
    _check_assertion(
        grant,
        issuer=issuer,
        has_secret=client_secret is not None,
        idp=identity_provider,
        person_only=redirect_url is not None or client_metadata_url is not None,
    )
    if issuer is not None and not issuer.startswith(("http://", "https://")):
        raise AuthoringError(f"oauth(issuer=...) must be an http(s) URL, not {issuer!r}")
    return OAuth(
        scopes=tuple(scopes) if scopes is not None else None,
        client_id=client_id,
        client_secret=client_secret,
        redirect_url=redirect_url,
        client_name=client_name,
        client_metadata_url=client_metadata_url,
        authorization_timeout_seconds=float(authorization_timeout_seconds),
        grant=grant,
        private_key=private_key,
        private_key_file=private_key_file,
        signing_algorithm=signing_algorithm,
        issuer=issuer,
        identity_provider=identity_provider,
    )


def _check_grant(
    grant: str,
    *,
    client_id: str | None,
    has_secret: bool,
    private_key: object,
    private_key_file: str | None,
    person_only: bool,
) -> None:
    """The options a grant takes: a machine's sign-in has a declared client and one way
    to authenticate it; a person's takes no private key."""
    has_key = private_key is not None or private_key_file is not None
    if grant not in ("authorization_code", "client_credentials", "identity_assertion"):
        raise AuthoringError(
            "oauth(grant=...) is 'authorization_code', 'client_credentials' or "
            f"'identity_assertion', not {grant!r}"
        )
    if grant != "client_credentials":
        if has_key:
            raise AuthoringError(
                "oauth(private_key=...) signs a client credentials grant: add "
                "grant='client_credentials'"
            )
        return
    if client_id is None:
        raise AuthoringError(
            "oauth(grant='client_credentials') needs the client_id registered for it"
        )
    if private_key is not None and not isinstance(private_key, EnvValue):
        raise AuthoringError(
            "oauth(private_key=...) must come from from_env('VARIABLE') (or use "
            "private_key_file=...): a literal key would be written into .eve/"
        )
    if [has_secret, private_key is not None, private_key_file is not None].count(True) != 1:
        raise AuthoringError(
            "oauth(grant='client_credentials') authenticates the client one way: "
            "client_secret=from_env(...), private_key=from_env(...) or private_key_file=..."
        )
    if person_only:
        raise AuthoringError(
            "oauth(grant='client_credentials') sends no one to sign in: redirect_url and "
            "client_metadata_url do not apply"
        )


def _check_assertion(
    grant: str,
    *,
    issuer: str | None,
    has_secret: bool,
    idp: IdentityProvider | None,
    person_only: bool,
) -> None:
    """An ``identity_assertion`` grant names its identity provider and authorization server
    and has a client secret (the SDK's jwt-bearer client is confidential); no other grant
    takes an identity provider."""
    if grant != "identity_assertion":
        if idp is not None:
            raise AuthoringError(
                "oauth(identity_provider=...) belongs to grant='identity_assertion'"
            )
        return
    if idp is None or issuer is None or not has_secret:
        raise AuthoringError(
            "oauth(grant='identity_assertion') needs identity_provider=identity_provider(...), "
            "the authorization server's issuer=... and the client_id with its "
            "client_secret=from_env(...)"
        )
    if person_only:
        raise AuthoringError(
            "oauth(grant='identity_assertion') sends no one to sign in: redirect_url and "
            "client_metadata_url do not apply"
        )
