"""Who asks: the server's chain of schemes, and the rule for when a public bind is guarded.

The chain, first match wins: the shared bearer token (``EVE_API_TOKEN``) proves the
operator; a bearer JWT the configured OIDC issuer signed proves a user; the custom hook of
``agent/auth.py`` may prove anyone; else the request is refused (401). A server with none
of the three (loopback, no token) answers every request as the operator.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from starlette.requests import Request

from eve.auth import OPERATOR, Principal
from eve.auth.tokens import TokenVerifier, looks_like_jwt
from eve.channels.mount import Authenticate
from eve.errors import InvalidToken, ServerConfigError, Unauthorized

TOKEN_ENV = "EVE_API_TOKEN"
#: the shortest token a public bind accepts: 32 random characters are beyond guessing
MIN_PUBLIC_TOKEN_LENGTH = 32
#: routes anyone may call from any host: a load balancer's health check has no token
PUBLIC_PATHS = frozenset({"/eve/v1/health"})
#: what the dev UI reads before it can sign in: the issuer and client id, nothing secret
AUTH_CONFIG_PATH = "/eve/v1/auth/config"
#: where an authorization server sends a person back after an MCP connection's sign-in: a
#: browser redirect carries no credential, and the sign-in's random ``state`` proves it
#: (``eve.connections.authorization.CALLBACK_PATH``)
OAUTH_CALLBACK_PATH = "/eve/v1/oauth/callback"
#: routes that need no principal (the dev UI's files are public too: ``is_ui_path``)
ANONYMOUS_PATHS = PUBLIC_PATHS | {AUTH_CONFIG_PATH, OAUTH_CALLBACK_PATH}

#: ``agent/auth.py``'s hook as the server calls it: a principal, or None to refuse
AuthHook = Callable[[Request], Awaitable[Principal | None]]


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


def require_token_for(host: str, token: str | None, *, verifies_users: bool = False) -> None:
    """Binding beyond loopback without a guard would publish every session: refuse.

    A public bind needs a shared token of at least ``MIN_PUBLIC_TOKEN_LENGTH`` characters,
    or none at all when users are verified another way (``verifies_users``: an OIDC issuer
    or ``agent/auth.py``), and then there is no operator unless the hook makes one. A short
    token is refused either way. The message never repeats the token it refuses.
    """
    if is_loopback(host) or is_strong_token(token) or (verifies_users and token is None):
        return
    problem = (
        f"{TOKEN_ENV} is {len(token)} characters, shorter than {MIN_PUBLIC_TOKEN_LENGTH}"
        if token
        else f"{TOKEN_ENV} is not set and no OIDC issuer (EVE_AUTH_ISSUER) or agent/auth.py "
        "verifies users"
    )
    raise ServerConfigError(
        f"eve serve --host {host} is reachable from other machines and {problem}; set "
        f"{TOKEN_ENV} to a random token of {MIN_PUBLIC_TOKEN_LENGTH} characters or more "
        "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`), or an "
        "issuer to verify users' tokens (docs/auth.md); clients send it as "
        "'Authorization: Bearer <token>'"
    )


def bearer_of(request: Request) -> str | None:
    """The credentials of an ``Authorization: Bearer`` header, as sent."""
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return given.strip() if scheme.lower() == "bearer" and given.strip() else None


def _is_token(sent: str, token: str) -> bool:
    # Compared as bytes, in constant time, so response timing tells nothing about the token.
    # Starlette decodes header bytes as Latin-1; encoding back gives the bytes as sent,
    # which for a non-ASCII token are its UTF-8 bytes.
    given = sent.encode("latin-1", errors="replace")
    return hmac.compare_digest(given, token.encode("utf-8"))


@dataclass(frozen=True, kw_only=True)
class ServerAuth:
    """The schemes a server accepts, in the order it tries them."""

    #: the shared bearer token, whose holder is the operator
    token: str | None = None
    #: verifies bearer JWTs of the configured OIDC issuer
    verifier: TokenVerifier | None = None
    #: ``agent/auth.py``'s ``authenticate``
    hook: AuthHook | None = None

    @property
    def is_open(self) -> bool:
        """No scheme at all: a loopback server without a token, whose caller is its operator."""
        return self.token is None and self.verifier is None and self.hook is None

    async def start(self) -> None:
        """Fetch the issuer's keys now, so an unreachable issuer stops the server at start
        (``IdentityProviderUnavailable``) instead of failing its first request."""
        if self.verifier is not None:
            await self.verifier.start()

    async def authenticate(self, request: Request) -> Principal:
        """The principal of ``request``; raises ``Unauthorized`` (``InvalidToken`` for a JWT
        eve refuses), ``IdentityProviderUnavailable`` or ``AuthHookFailed``."""
        if self.is_open:
            return OPERATOR
        refused: Unauthorized = Unauthorized("missing or wrong bearer token")
        bearer = bearer_of(request)
        if bearer is not None:
            if self.token is not None and _is_token(bearer, self.token):
                return OPERATOR
            if self.verifier is not None and looks_like_jwt(bearer):
                try:
                    return await self.verifier.verify(bearer)
                except InvalidToken as invalid:
                    refused = invalid  # the hook may still know the request another way
        if self.hook is not None:
            principal = await self.hook(request)
            if principal is not None:
                return principal
        raise refused


#: the key of ``request.state`` where the auth middleware puts the request's principal
PRINCIPAL_STATE = "principal"


def principal_of(request: Request) -> Principal:
    """Who makes ``request``, as the auth middleware verified it."""
    principal: Principal = getattr(request.state, PRINCIPAL_STATE)
    return principal


def token_authenticator(token: str | None) -> Authenticate:
    """The server's chain with the shared token alone: the operator, when a request
    carries the token (or the server has none)."""
    return ServerAuth(token=token).authenticate


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
