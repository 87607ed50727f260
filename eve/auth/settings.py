"""How a server verifies users' tokens: the OIDC issuer, audience and claims it trusts.

Read from ``eve serve --auth-*`` options, ``eve_app(auth_*=...)`` or ``EVE_AUTH_*``
variables, an option winning over its variable; checked once here so a server never starts
with settings that cannot work.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from eve.errors import AuthConfigInvalid

ISSUER_ENV = "EVE_AUTH_ISSUER"
AUDIENCE_ENV = "EVE_AUTH_AUDIENCE"
CLIENT_ID_ENV = "EVE_AUTH_CLIENT_ID"
ROLES_CLAIM_ENV = "EVE_AUTH_ROLES_CLAIM"
#: the claim a principal's roles are read from unless configured (``realm_access.roles``
#: for Keycloak: a dotted name walks into objects)
DEFAULT_ROLES_CLAIM = "roles"
#: the only signatures accepted: asymmetric, so the keys the issuer publishes cannot sign
#: (``none`` and ``HS*`` are never accepted, whatever a token's header says)
ALGORITHMS = ("RS256", "ES256")
#: the hosts an ``http://`` issuer may have: a provider on this machine
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True, kw_only=True)
class OIDCSettings:
    """The issuer a server trusts and what it checks in each token."""

    #: the ``iss`` tokens must carry; discovery is ``<issuer>/.well-known/openid-configuration``
    issuer: str
    #: the ``aud`` tokens must carry (the API's identifier at the issuer)
    audience: str
    #: the public client the dev UI signs in as (authorization code + PKCE), if any
    client_id: str | None = None
    #: where a principal's roles are read from, into ``claims["roles"]``
    roles_claim: str = DEFAULT_ROLES_CLAIM
    #: seconds of clock skew allowed on ``exp``, ``nbf`` and ``iat``
    leeway_seconds: float = 30.0
    #: seconds to wait for the issuer's discovery document or keys
    timeout_seconds: float = 5.0
    #: the least seconds between two fetches of the keys for a token naming an unknown key
    refetch_seconds: float = 30.0
    #: seconds the keys are used before they are fetched again (keys the issuer dropped stop
    #: verifying within this time even if no token names an unknown one)
    max_key_age_seconds: float = 3600.0

    @property
    def discovery_url(self) -> str:
        return self.issuer.rstrip("/") + "/.well-known/openid-configuration"


def oidc_settings(
    *,
    issuer: str | None = None,
    audience: str | None = None,
    client_id: str | None = None,
    roles_claim: str | None = None,
    env: Mapping[str, str],
) -> OIDCSettings | None:
    """The OIDC settings given (else read from ``env``), or None when no issuer is set.

    Raises ``AuthConfigInvalid`` for an issuer without an audience or the reverse, an
    issuer that is not an ``https`` URL (``http`` only on a loopback host, for tests and
    local providers), and an empty roles claim.
    """
    issuer = issuer or env.get(ISSUER_ENV) or None
    audience = audience or env.get(AUDIENCE_ENV) or None
    client_id = client_id or env.get(CLIENT_ID_ENV) or None
    roles_claim = roles_claim if roles_claim is not None else env.get(ROLES_CLAIM_ENV)
    if issuer is None and audience is None:
        return None
    if issuer is None:
        raise AuthConfigInvalid(
            f"{AUDIENCE_ENV} is set but {ISSUER_ENV} is not: set the issuer whose tokens "
            "carry that audience (--auth-issuer), or neither",
            setting=ISSUER_ENV,
        )
    if audience is None:
        # without an audience any token of the issuer would do, one minted for another app too
        raise AuthConfigInvalid(
            f"{ISSUER_ENV} is set but {AUDIENCE_ENV} is not: set the audience the issuer "
            "puts in tokens for this API (--auth-audience), so a token minted for another "
            "application is refused",
            setting=AUDIENCE_ENV,
        )
    _check_issuer(issuer)
    if roles_claim is not None and not roles_claim.strip():
        raise AuthConfigInvalid(
            f"{ROLES_CLAIM_ENV} is empty: name the claim holding the roles (default "
            f"{DEFAULT_ROLES_CLAIM!r}), or leave it unset",
            setting=ROLES_CLAIM_ENV,
        )
    return OIDCSettings(
        issuer=issuer,
        audience=audience,
        client_id=client_id,
        roles_claim=(roles_claim or DEFAULT_ROLES_CLAIM).strip(),
    )


def _check_issuer(issuer: str) -> None:
    parts = urlsplit(issuer)
    loopback = (parts.hostname or "") in _LOOPBACK
    if parts.hostname and (parts.scheme == "https" or (parts.scheme == "http" and loopback)):
        return
    raise AuthConfigInvalid(
        f"{ISSUER_ENV} must be an https:// URL (http:// only on 127.0.0.1, localhost or "
        f"[::1]), not {issuer[:100]!r}: the keys that verify every token are fetched from it",
        setting=ISSUER_ENV,
    )
