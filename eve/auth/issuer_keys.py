"""The signing keys of an OIDC issuer: found by discovery, cached, fetched again on rotation.

A token names its key by ``kid``. A known kid is answered from the cache; an unknown one
fetches the JWKS again (the issuer rotated), at most once per ``refetch_seconds`` so a flood
of tokens with made-up kids cannot make the server hammer the issuer. A fetch replaces the
whole set: a key the issuer dropped stops verifying.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
import msgspec

from eve._tls import shared_tls_context
from eve.auth.settings import ALGORITHMS, OIDCSettings
from eve.errors import IdentityProviderUnavailable

log = logging.getLogger("eve.auth")


class Discovery(msgspec.Struct, frozen=True, kw_only=True):
    """The fields eve reads of ``<issuer>/.well-known/openid-configuration``."""

    issuer: str
    jwks_uri: str
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None


class _KeySet(msgspec.Struct, frozen=True):
    keys: list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class VerifyingKey:
    """One public key of the issuer and the one algorithm it verifies."""

    kid: str
    algorithm: str
    key: Any


class IssuerKeys:
    """The issuer's discovery document and current public keys, by kid."""

    def __init__(
        self,
        settings: OIDCSettings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._transport = transport
        self._clock = clock
        self._keys: dict[str, VerifyingKey] = {}
        self._discovery: Discovery | None = None
        self._fetched_at: float | None = None
        self._lock = asyncio.Lock()

    @property
    def discovery(self) -> Discovery | None:
        return self._discovery

    async def start(self) -> None:
        """Fetch discovery and keys; raises ``IdentityProviderUnavailable`` if either fails,
        so a server never starts unable to verify a single token."""
        async with self._lock:
            await self._refresh()

    async def key_for(self, kid: str) -> VerifyingKey | None:
        """The key named ``kid``, fetching the keys again when it is unknown (rate-limited)
        or when they are older than ``max_key_age_seconds``; None when the issuer has none."""
        if kid in self._keys and not self._too_old():
            return self._keys[kid]
        async with self._lock:
            if kid in self._keys and not self._too_old():
                return self._keys[kid]  # another request fetched them meanwhile
            if self._may_refetch():
                await self._refetch(keep_on_failure=kid in self._keys)
            return self._keys.get(kid)

    def is_current(self, kid: str) -> bool:
        """``kid`` is among the keys and they are not due for a fetch: what a token
        verified before may still rely on without asking ``key_for``."""
        return kid in self._keys and not self._too_old()

    def _too_old(self) -> bool:
        fetched = self._fetched_at
        return fetched is None or self._clock() - fetched >= self.settings.max_key_age_seconds

    def _may_refetch(self) -> bool:
        fetched = self._fetched_at
        return fetched is None or self._clock() - fetched >= self.settings.refetch_seconds

    async def _refetch(self, *, keep_on_failure: bool) -> None:
        try:
            await self._refresh()
        except IdentityProviderUnavailable as unavailable:
            if not keep_on_failure:
                raise
            # the key asked for is still cached: an issuer blip does not lock users out
            log.warning("%s; verifying with the keys fetched before", unavailable)

    async def _refresh(self) -> None:
        async with httpx.AsyncClient(
            transport=self._transport,
            timeout=self.settings.timeout_seconds,
            verify=shared_tls_context("httpx"),
        ) as client:
            discovery = self._discovery or await self._discover(client)
            keys = await self._fetch_keys(client, discovery.jwks_uri)
        self._discovery, self._keys, self._fetched_at = discovery, keys, self._clock()

    async def _discover(self, client: httpx.AsyncClient) -> Discovery:
        url = self.settings.discovery_url
        discovery = msgspec.convert(await _get_json(client, url, "discovery document"), Discovery)
        if discovery.issuer.rstrip("/") != self.settings.issuer.rstrip("/"):
            raise IdentityProviderUnavailable(
                f"the discovery document at {url} names the issuer {discovery.issuer[:100]!r}, "
                "not the one configured: check EVE_AUTH_ISSUER",
                url=url,
            )
        return discovery

    async def _fetch_keys(self, client: httpx.AsyncClient, url: str) -> dict[str, VerifyingKey]:
        key_set = msgspec.convert(await _get_json(client, url, "keys (jwks_uri)"), _KeySet)
        keys = (_verifying_key(jwk) for jwk in key_set.keys)
        return {key.kid: key for key in keys if key is not None}


async def _get_json(client: httpx.AsyncClient, url: str, what: str) -> Any:
    try:
        response = await client.get(url, headers={"accept": "application/json"})
        response.raise_for_status()
        return msgspec.json.decode(response.content)
    except (httpx.HTTPError, msgspec.DecodeError) as error:
        raise IdentityProviderUnavailable(
            f"the identity provider's {what} cannot be fetched from {url}: "
            f"{type(error).__name__}; check EVE_AUTH_ISSUER and that the issuer is reachable",
            url=url,
        ) from error


def _verifying_key(jwk: dict[str, Any]) -> VerifyingKey | None:
    """``jwk`` as a key for one of ``ALGORITHMS``; None for keys eve never verifies with
    (encryption keys, symmetric ones, other algorithms, no kid)."""
    kid = jwk.get("kid")
    if not isinstance(kid, str) or jwk.get("use", "sig") != "sig":
        return None
    algorithm = jwk.get("alg") or {"RSA": "RS256", "EC": "ES256"}.get(str(jwk.get("kty")))
    if algorithm not in ALGORITHMS:
        return None
    try:
        parsed = jwt.PyJWK(jwk, algorithm=algorithm)
    except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError):
        log.warning("the issuer's key %r is not a valid %s key; skipped", kid[:64], algorithm)
        return None
    return VerifyingKey(kid=kid, algorithm=algorithm, key=parsed.key)
