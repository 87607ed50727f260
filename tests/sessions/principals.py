"""Callers with real tokens, for tests: a server that verifies the loopback provider's JWTs
(``tests/oidc/provider.py``), and a driver that calls it as a chosen user.

A user's id is ``<iss>#<sub>`` (``eve.auth.tokens``); ``ALICE``, ``BOB`` and ``CAROL`` are
the principals a server verifies from the provider's tokens for ``alice``, ``bob`` and
``carol``, so tests on the service and tests through the routes name the same owners.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from eve.auth.principal import Principal
from eve.auth.settings import OIDCSettings
from eve.server.auth import TOKEN_ENV
from eve.sessions import SessionService
from tests.conftest import write_files
from tests.oidc.provider import AUDIENCE, CLIENT_ID, Provider
from tests.sessions.apps import SCRIPTED_AGENT
from tests.sessions.harness import Driver, script
from tests.sessions.inprocess import InProcessServer

T = TypeVar("T")

#: the issuer a ``Provider()`` served in process signs as
ISSUER = Provider.issuer
#: the shared token: its holder is the operator
OPERATOR_TOKEN = "principals-operator-token-0123456789abcdef"


def user(sub: str, *roles: str) -> Principal:
    """The principal a server verifies from the provider's token for ``sub``."""
    return Principal(id=f"{ISSUER}#{sub}", kind="user", claims={"roles": list(roles)})


ALICE = user("alice")
BOB = user("bob")
#: holds the role ``finance``, and owns nothing
CAROL = user("carol", "finance")


def scripted_root(
    factory: pytest.TempPathFactory, responses: list[dict[str, Any]], files: dict[str, str]
) -> Path:
    """A fresh app root for a module's shared server: the scripted agent of
    ``tests.sessions.apps`` with ``responses``, plus ``files``."""
    root = factory.mktemp("principals")
    agent = SCRIPTED_AGENT.replace("{limits}", "{'max_turns': 5}")
    instructions = "Follow the script.\n"
    write_files(root, {"agent/agent.py": agent, "agent/instructions.md": instructions, **files})
    script(root, responses)
    return root


def oidc_settings(provider: Provider) -> OIDCSettings:
    # keys are fetched again for every unknown kid (the rate limit has its own test)
    return OIDCSettings(
        issuer=provider.issuer, audience=AUDIENCE, client_id=CLIENT_ID, refetch_seconds=0
    )


def verifying(root: Path, provider: Provider, **fields: Any) -> InProcessServer:
    """A server on ``root`` that takes the provider's tokens for users and
    ``OPERATOR_TOKEN`` for the operator (its own ``headers()`` send the latter)."""
    return InProcessServer(
        root,
        env={TOKEN_ENV: OPERATOR_TOKEN},
        token=OPERATOR_TOKEN,
        oidc=oidc_settings(provider),
        oidc_transport=provider.transport(),
        **fields,
    )


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@dataclass
class As(Driver):
    """``server``'s routes, called with the provider's token for ``principal``."""

    server: InProcessServer
    provider: Provider
    principal: Principal
    #: the provider's JWT for ``principal``, minted once
    token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        issuer, _, sub = self.principal.id.rpartition("#")
        assert issuer == self.provider.issuer, "a principal of this provider"
        self.token = self.provider.token(sub, roles=sorted(self.principal.roles))

    @property
    def url(self) -> str:
        return self.server.url

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
