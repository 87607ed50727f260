"""The server's auth as configured: its chain of schemes, and what the dev UI may know of it.

``GET /eve/v1/auth/config`` is public: the UI reads it before anyone signs in, to offer an
OIDC login (authorization code + PKCE) against the issuer. It tells the issuer, its two
endpoints and the public client id; nothing there is secret.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import httpx
from starlette.requests import Request
from starlette.responses import Response

from eve.auth.issuer_keys import IssuerKeys
from eve.auth.settings import OIDCSettings
from eve.auth.tokens import TokenVerifier
from eve.authoring.auth import AuthDefinition
from eve.server.answers import answer
from eve.server.auth import ServerAuth
from eve.server.auth_hook import auth_hook
from eve.wire.answers import AuthConfig, OIDCLogin

#: the scopes the dev UI asks for: an id, and a token to call the API with
UI_SCOPES = "openid profile"


def server_auth(
    *,
    token: str | None,
    oidc: OIDCSettings | None,
    hook: AuthDefinition | None,
    hook_source: str = "agent/auth.py",
    transport: httpx.AsyncBaseTransport | None = None,
) -> ServerAuth:
    """The chain a server with these settings runs (``transport``: how the issuer is
    reached, for a provider served in process)."""
    verifier = None
    if oidc is not None:
        verifier = TokenVerifier(oidc, IssuerKeys(oidc, transport=transport))
    return ServerAuth(
        token=token,
        verifier=verifier,
        hook=None if hook is None else auth_hook(hook, source=hook_source),
    )


def auth_config_route(auth: ServerAuth) -> Callable[[Request], Awaitable[Response]]:
    async def auth_config(request: Request) -> Response:
        return answer(AuthConfig(oidc=ui_login(auth)))

    return auth_config


def ui_login(auth: ServerAuth) -> OIDCLogin | None:
    """What the UI needs for an OIDC login, or None when it cannot offer one (no issuer,
    no client id, or an issuer whose discovery names no endpoints)."""
    verifier = auth.verifier
    if verifier is None or verifier.settings.client_id is None:
        return None
    discovery = verifier.keys.discovery
    if discovery is None or not discovery.authorization_endpoint or not discovery.token_endpoint:
        return None
    return OIDCLogin(
        issuer=verifier.settings.issuer,
        client_id=verifier.settings.client_id,
        authorization_endpoint=discovery.authorization_endpoint,
        token_endpoint=discovery.token_endpoint,
        audience=verifier.settings.audience,
        scope=UI_SCOPES,
    )


def token_endpoint_origin(auth: ServerAuth) -> str | None:
    """The origin the UI posts the code to: the page's Content-Security-Policy allows it."""
    login = ui_login(auth)
    if login is None:
        return None
    parts = urlsplit(login.token_endpoint)
    return f"{parts.scheme}://{parts.netloc}"
