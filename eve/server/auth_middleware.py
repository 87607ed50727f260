"""ASGI middleware that decides who asks, once per request, before any route runs.

It puts the principal in ``request.state`` (``auth.principal_of``) or answers the refusal:
401 with ``WWW-Authenticate: Bearer`` (``error="invalid_token"`` for a token eve refuses),
503 when the issuer's keys cannot be fetched, 500 when ``agent/auth.py`` fails. Public
routes (health, the UI's files, the auth config) and channels' routes, which authenticate
themselves through the same chain, pass untouched.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from eve.errors import EveError, IdentityProviderUnavailable, InvalidToken, Unauthorized
from eve.server.answers import refusal
from eve.server.auth import (
    ANONYMOUS_PATHS,
    PRINCIPAL_STATE,
    ServerAuth,
    route_path,
    under_channel,
)
from eve.server.web_ui import is_ui_path

log = logging.getLogger("eve.server")


class PrincipalAuth:
    """Sets each request's principal, or refuses the request."""

    def __init__(self, app: ASGIApp, auth: ServerAuth, channel_paths: Sequence[str] = ()) -> None:
        self.app = app
        self.auth = auth
        #: a channel authenticates its own requests, by the chain or its protocol's scheme
        self.channel_paths = [path.rstrip("/") for path in channel_paths]

    def _needs_principal(self, request: Request) -> bool:
        path = route_path(request)
        if path in ANONYMOUS_PATHS or is_ui_path(path):
            return False
        return not under_channel(request, self.channel_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if self._needs_principal(request):
            try:
                principal = await self.auth.authenticate(request)
            except EveError as error:
                await answer_refused(error)(scope, receive, send)
                return
            scope.setdefault("state", {})[PRINCIPAL_STATE] = principal
        await self.app(scope, receive, send)


def answer_refused(error: EveError) -> ASGIApp:
    """The answer to a request whose principal could not be established."""
    if isinstance(error, InvalidToken):
        return refusal(error, **{"www-authenticate": 'Bearer error="invalid_token"'})
    if isinstance(error, Unauthorized):
        return refusal(error, **{"www-authenticate": "Bearer"})
    if isinstance(error, IdentityProviderUnavailable):
        log.warning("%s", error)
    return refusal(error)
