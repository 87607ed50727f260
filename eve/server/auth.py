"""Bearer-token authentication and the rule for when a token is required."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence

from starlette.requests import Request

from eve.auth import OPERATOR, Principal
from eve.channels.mount import Authenticate
from eve.errors import ServerConfigError, Unauthorized
from eve.server.web_ui import is_ui_path

TOKEN_ENV = "EVE_API_TOKEN"
#: the shortest token a public bind accepts: 32 random characters are beyond guessing
MIN_PUBLIC_TOKEN_LENGTH = 32
#: routes anyone may call: a load balancer's health check has no token
PUBLIC_PATHS = frozenset({"/eve/v1/health"})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_strong_token(token: str | None) -> bool:
    """``token`` is long enough to guard a server any page or machine can reach."""
    return token is not None and len(token) >= MIN_PUBLIC_TOKEN_LENGTH


def require_token_for(host: str, token: str | None) -> None:
    """Binding beyond loopback without a strong token would publish every session: refuse.

    A public bind needs a token of at least ``MIN_PUBLIC_TOKEN_LENGTH`` characters; the
    message never repeats the token it refuses.
    """
    if is_loopback(host) or is_strong_token(token):
        return
    problem = (
        f"{TOKEN_ENV} is {len(token)} characters, shorter than {MIN_PUBLIC_TOKEN_LENGTH}"
        if token
        else f"{TOKEN_ENV} is not set"
    )
    raise ServerConfigError(
        f"eve serve --host {host} is reachable from other machines and {problem}; set "
        f"{TOKEN_ENV} to a random token of {MIN_PUBLIC_TOKEN_LENGTH} characters or more "
        "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`); "
        "clients send it as 'Authorization: Bearer <token>'"
    )


def authorized(request: Request, token: str | None) -> bool:
    path = route_path(request)
    # the dev UI's files hold no secret; the page asks for the token before it calls the API
    if token is None or path in PUBLIC_PATHS or is_ui_path(path):
        return True
    return _carries(request, token)


def _carries(request: Request, token: str) -> bool:
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    # Compared as bytes, in constant time, so response timing tells nothing about the token.
    # Starlette decodes header bytes as Latin-1; encoding back gives the bytes as sent,
    # which for a non-ASCII token are its UTF-8 bytes.
    sent = given.encode("latin-1", errors="replace")
    return scheme.lower() == "bearer" and hmac.compare_digest(sent, token.encode("utf-8"))


#: the key of ``request.state`` where the auth middleware puts the request's principal
PRINCIPAL_STATE = "principal"


def principal_of(request: Request) -> Principal:
    """Who makes ``request``, as the auth middleware verified it."""
    principal: Principal = getattr(request.state, PRINCIPAL_STATE)
    return principal


def token_authenticator(token: str | None) -> Authenticate:
    """The principal of a request by the shared token: the operator, when it carries the
    token (or the server has none); a channel's routes call it for each request."""

    async def authenticate(request: Request) -> Principal:
        if token is None or _carries(request, token):
            return OPERATOR
        raise Unauthorized("missing or wrong bearer token")

    return authenticate


def under_channel(request: Request, channel_paths: Sequence[str]) -> bool:
    """``request`` is for a channel's routes (its path or below): the channel's kind
    authenticates it and reads its body in its protocol's way."""
    path = route_path(request)
    return any(path == p or path.startswith(p + "/") for p in channel_paths)


def route_path(request: Request) -> str:
    """The path below the app's mount point: mounted under ``/agent`` (``root_path``), the
    request's ``/agent/eve/v1/health`` is the app's ``/eve/v1/health``."""
    path, root = request.url.path, request.scope.get("root_path", "")
    if root and path.startswith(root + "/"):
        return path[len(root) :]
    return path
