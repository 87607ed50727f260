"""A STAND-IN for verified tokens, for tests only: requests made as a chosen principal.

Until the server verifies JWTs (issue 25's other half), the only principal a request can
carry is the shared token's operator. To exercise the route handlers' ownership and answer
checks with other principals, ``stand_in`` adds one more ASGI middleware to the app of an
``InProcessServer``, innermost (after the auth middleware set the operator): it replaces
the request's principal with the one the ``x-test-principal`` header names. Nothing in eve
reads that header; once real tokens land, ``As`` sends a token instead and this goes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import msgspec
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from eve.auth.principal import Principal
from eve.server.auth import PRINCIPAL_STATE
from eve.sessions import SessionService
from tests.sessions.harness import Driver
from tests.sessions.inprocess import InProcessServer

HEADER = "x-test-principal"
T = TypeVar("T")

ALICE = Principal(id="alice", kind="user")
BOB = Principal(id="bob", kind="user")
#: holds the role ``finance``, and owns nothing
CAROL = Principal(id="carol", kind="user", claims={"roles": ["finance"]})


class _StandInPrincipal:
    """Sets the principal the ``x-test-principal`` header names (a ``Principal`` as JSON)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            named = dict(scope["headers"]).get(HEADER.encode())
            if named is not None:
                principal = msgspec.json.decode(named, type=Principal)
                scope.setdefault("state", {})[PRINCIPAL_STATE] = principal
        await self.app(scope, receive, send)


def stand_in(server: InProcessServer) -> InProcessServer:
    """Add the stand-in to a started server's app: the middleware stack is built again,
    around the same routes and the same running service, on the next request."""
    assert server.http is not None, "start() the server first"
    app: Any = server.http.app
    app.user_middleware.append(Middleware(_StandInPrincipal))
    app.middleware_stack = None
    return server


@dataclass
class As(Driver):
    """``server``'s routes, called as ``principal`` (through the stand-in)."""

    server: InProcessServer
    principal: Principal

    @property
    def url(self) -> str:
        return self.server.url

    def headers(self) -> dict[str, str]:
        named = msgspec.json.encode(self.principal).decode()
        return {**self.server.headers(), HEADER: named}

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        kwargs.setdefault("headers", self.headers())
        return self.server.request(method, path, **kwargs)

    def stream(self, path: str, **kwargs: Any) -> AbstractContextManager[httpx.Response]:
        kwargs.setdefault("headers", self.headers())
        return self.server.stream(path, **kwargs)


def on_service(server: InProcessServer, call: Callable[[SessionService], Awaitable[T]]) -> T:
    """``call`` on the server's running ``SessionService``, on the app's own event loop."""
    assert server.http is not None and server.http.portal is not None
    service: SessionService = server.http.app.state.service  # type: ignore[attr-defined]

    async def run() -> T:
        return await call(service)

    return server.http.portal.call(run)
