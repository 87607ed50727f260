"""What every OAuth grant of a connection adds to the SDK's provider: the stored expiry
restored, and the SDK's failures kept by name.

The SDK's failures happen inside the transport, which reports them as a closed
connection; the link keeps the real one and the pool raises it. Shared by the person's
grant (``connections.oauth_client``) and the machine's (``connections.oauth_machine``).
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


class NamedFailures(OAuthClientProvider):
    """Mixed in before the SDK's provider class; the subclass sets ``link`` and ``expiry``."""

    link: FailureHolder
    expiry: ExpiryHolder

    async def _initialize(self) -> None:
        await super()._initialize()
        # the SDK restores tokens without their expiry (it knows only a relative
        # expires_in); with the absolute time stored, an expired token is renewed before
        # it is sent rather than after the server refuses it
        self.context.token_expiry_time = self.expiry.expires_at

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
