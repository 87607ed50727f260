"""Bearer-token authentication and the rule for when a token is required."""

from __future__ import annotations

import hmac
import ipaddress

from starlette.requests import Request

from eve.errors import ServerConfigError

TOKEN_ENV = "EVE_API_TOKEN"
#: routes anyone may call: a load balancer's health check has no token
PUBLIC_PATHS = frozenset({"/eve/v1/health"})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_token_for(host: str, token: str | None) -> None:
    """Binding beyond loopback without a token would publish every session: refuse."""
    if not token and not is_loopback(host):
        raise ServerConfigError(
            f"eve serve --host {host} is reachable from other machines; set {TOKEN_ENV} "
            "to a long random token (clients send it as 'Authorization: Bearer <token>')"
        )


def authorized(request: Request, token: str | None) -> bool:
    if token is None or request.url.path in PUBLIC_PATHS:
        return True
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    # constant time, so response timing tells nothing about the token
    return scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), token.encode())
