"""A bearer JWT checked against the issuer: signature, ``iss``, ``aud``, ``exp``, ``nbf``.

The answer is a ``user`` principal whose id is ``<iss>#<sub>`` (stable: a subject is unique
per issuer) and whose claims are the token's, with the roles copied to ``claims["roles"]``
from the configured claim. A refusal is one ``InvalidToken`` whose message says what was
wrong and never quotes the token or its claims.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import jwt

from eve.auth.issuer_keys import IssuerKeys
from eve.auth.principal import Principal
from eve.auth.settings import ALGORITHMS, OIDCSettings
from eve.errors import InvalidToken

#: what each PyJWT refusal means to the caller, most specific first
_REASONS: tuple[tuple[type[jwt.PyJWTError], str], ...] = (
    (jwt.ExpiredSignatureError, "the token has expired"),
    (jwt.ImmatureSignatureError, "the token is not valid yet"),
    (jwt.InvalidAudienceError, "the token is for another audience"),
    (jwt.InvalidIssuerError, "the token is from another issuer"),
    (jwt.InvalidSignatureError, "the token's signature does not verify"),
    (jwt.MissingRequiredClaimError, "the token lacks a required claim"),
    (jwt.PyJWTError, "the token is not a valid JWT"),
)
#: claims every accepted token carries
REQUIRED_CLAIMS = ("iss", "sub", "aud", "exp")
#: tokens remembered as verified: a client sends the same one on every request, and a
#: lookup costs microseconds where PyJWT's parse and an RSA check cost a few hundred
VERIFIED_CACHE_SIZE = 1024


@dataclass(frozen=True, kw_only=True)
class _Verified:
    principal: Principal
    kid: str
    expires: float


def looks_like_jwt(token: str) -> bool:
    """A compact JWS has three dot-separated parts; a shared token (or another scheme's
    opaque one) has not, so it is never sent to the issuer's keys."""
    return token.count(".") == 2


class TokenVerifier:
    """Verifies bearer JWTs of one issuer."""

    def __init__(self, settings: OIDCSettings, keys: IssuerKeys, *, clock: Any = time.time) -> None:
        self.settings = settings
        self.keys = keys
        self._clock = clock
        self._verified: OrderedDict[str, _Verified] = OrderedDict()

    async def start(self) -> None:
        await self.keys.start()

    async def verify(self, token: str) -> Principal:
        """The principal ``token`` proves; raises ``InvalidToken`` (401) or, when the
        issuer's keys cannot be fetched, ``IdentityProviderUnavailable`` (503)."""
        known = self._verified.get(token)
        # a token verified before stands while it has not expired and its key is still
        # published (and not due for a fetch, which could drop it)
        if known is not None and self._clock() < known.expires and self.keys.is_current(known.kid):
            return known.principal
        self._verified.pop(token, None)
        principal, kid, expires = await self._check(token)
        self._verified[token] = _Verified(principal=principal, kid=kid, expires=expires)
        if len(self._verified) > VERIFIED_CACHE_SIZE:
            self._verified.popitem(last=False)
        return principal

    async def _check(self, token: str) -> tuple[Principal, str, float]:
        header = _header(token)
        algorithm, kid = header.get("alg"), header.get("kid")
        if algorithm not in ALGORITHMS:
            raise InvalidToken(f"the token is signed with {_short(algorithm)}, which eve refuses")
        if not isinstance(kid, str):
            raise InvalidToken("the token names no signing key (kid)")
        key = await self.keys.key_for(kid)
        if key is None or key.algorithm != algorithm:
            raise InvalidToken("the token is signed by a key the issuer does not publish")
        claims = self._decode(token, key.key, algorithm)
        principal_id = f"{claims['iss']}#{claims['sub']}"
        principal = Principal(id=principal_id, kind="user", claims=self._with_roles(claims))
        return principal, kid, float(claims["exp"]) + self.settings.leeway_seconds

    def _decode(self, token: str, key: Any, algorithm: str) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self.settings.audience,
                issuer=self.settings.issuer,
                leeway=self.settings.leeway_seconds,
                options={"require": list(REQUIRED_CLAIMS)},
            )
        except jwt.PyJWTError as error:
            reason = next(text for kind, text in _REASONS if isinstance(error, kind))
            raise InvalidToken(reason) from None  # PyJWT's text may quote a claim
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise InvalidToken("the token's subject (sub) is not a non-empty string")
        return claims

    def _with_roles(self, claims: dict[str, Any]) -> dict[str, Any]:
        found: Any = claims
        for part in self.settings.roles_claim.split("."):
            found = found.get(part) if isinstance(found, dict) else None
        if isinstance(found, str):
            found = found.split()  # a space-separated list, as OAuth's ``scope`` is written
        roles = [r for r in found if isinstance(r, str)] if isinstance(found, list) else []
        return {**claims, "roles": roles}


def _header(token: str) -> dict[str, Any]:
    try:
        header: dict[str, Any] = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise InvalidToken("the token is not a valid JWT") from None
    return header


def _short(value: object) -> str:
    return repr(value)[:20]
