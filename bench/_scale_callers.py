"""Who the scale benchmark's clients are: the operator (the shared token, by default), or
with ``--principals`` each client a user of its own, with a real signed token.

The tokens come from the tests' OpenID provider (``tests/oidc/provider.py``), served on a
loopback port for the run; the servers verify them as any deployment does (its discovery
document and JWKS over HTTP, ``EVE_AUTH_ISSUER`` and ``EVE_AUTH_AUDIENCE``). Each client's
sessions are then its own, and each of its messages goes through the owner's check
(``access.may_see``), which the operator's skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

#: how long a client's token lives: past any run
TOKEN_SECONDS = 4 * 3600


@dataclass(frozen=True)
class Users:
    """The provider serving for the run, and the servers' settings for it."""

    provider: Any
    settings: dict[str, str]

    def tokens(self, first: int, count: int) -> list[str]:
        """Tokens of users ``bench-<first>`` onwards, one each."""
        return [
            self.provider.token(f"bench-{n}", expires_in=TOKEN_SECONDS)
            for n in range(first, first + count)
        ]


@contextmanager
def users() -> Iterator[Users]:
    from tests.oidc.provider import AUDIENCE, Provider

    with Provider().serve() as provider:
        settings = {"EVE_AUTH_ISSUER": provider.issuer, "EVE_AUTH_AUDIENCE": AUDIENCE}
        yield Users(provider=provider, settings=settings)
