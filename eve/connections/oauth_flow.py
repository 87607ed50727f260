"""What every OAuth grant of a connection adds to the SDK's provider: the SDK's failures
kept by name, and (for the OAuth client providers) the stored expiry restored.

The SDK's failures happen inside the transport, which reports them as a closed
connection; the link keeps the real one and the pool raises it. Shared by the person's
grant (``connections.oauth_client``), the machine's (``connections.oauth_machine``) and the
identity assertion's (``connections.oauth_assertion``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError

from eve.errors import MCPAuthorizationFailed, MCPConnectionError
from eve.manifest import ConnectionEntry


class FailureHolder(Protocol):
    """The link a provider reports to (``OAuthLink``)."""

    entry: ConnectionEntry
    failure: MCPConnectionError | None


class ExpiryHolder(Protocol):
    """The storage a provider reads tokens from, which knows their absolute expiry."""

    expires_at: float | None


class KeepsFailures(httpx2.Auth):
    """Mixed in before any of the SDK's auth providers; the subclass sets ``link``."""

    link: FailureHolder

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super().async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except MCPConnectionError as error:
            self.link.failure = error
            raise
        except (OAuthFlowError, ValueError) as error:
            # discovery, registration or the token request failed (ValueError: metadata
            # the SDK could not validate); the message quotes the server's error body
            self.link.failure = MCPAuthorizationFailed(
                f"connection {self.link.entry.name!r}: OAuth sign-in failed: "
                f"{type(error).__name__}: {error}",
                connection=self.link.entry.name,
            )
            raise
        finally:
            await flow.aclose()


class NamedFailures(KeepsFailures, OAuthClientProvider):
    """Mixed in before the SDK's OAuth client providers; the subclass sets ``link`` and
    ``expiry``."""

    expiry: ExpiryHolder

    async def _initialize(self) -> None:
        await super()._initialize()
        # the SDK restores tokens without their expiry (it knows only a relative
        # expires_in); with the absolute time stored, an expired token is renewed before
        # it is sent rather than after the server refuses it
        self.context.token_expiry_time = self.expiry.expires_at
