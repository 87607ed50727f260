"""OAuth 2.1 for a Streamable HTTP connection, as MCP's authorization spec has it, through the SDK.

The ``mcp`` SDK's ``OAuthClientProvider`` does the protocol: on a 401 it reads the
``WWW-Authenticate`` challenge, discovers the protected resource metadata (RFC 9728) and
the authorization server's (RFC 8414 / OpenID discovery), registers a client (RFC 7591)
unless one is declared, sends the person to sign in with PKCE (S256), exchanges the code,
refreshes an expired token, and follows a 403 ``insufficient_scope`` challenge with a
sign-in for the wider scope (step-up). This module gives it what is eve's:

- **storage**: the grant of this connection and principal in the session database
  (``eve.sessions.oauth_tokens``), or in memory where no turn lends a store (a script
  using the pool); every token and client secret joins the redaction set as it is read;
- **the person**: the link goes out as an ``authorization.required`` event of the turn
  (``connections.authorization``) and the call waits, up to the connection's
  ``authorization_timeout_seconds``, for the callback; a loopback redirect URL gets a
  listener of this process while it waits, unless an eve server holds the port
  (``connections.loopback``);
- **named errors**: the SDK's failures happen inside the transport, which reports them as
  a closed connection, so the link keeps the real one and the pool raises it
  (``connections.oauth_flow``).

A ``grant="client_credentials"`` connection has no person: its provider is the SDK's
machine-to-machine one (``connections.oauth_machine``), with the same storage; nor has a
``grant="identity_assertion"`` one, whose token comes from an enterprise IdP's identity
assertion (``connections.oauth_assertion``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from eve._redact import add_secret
from eve.connections import authorization
from eve.connections.loopback import LoopbackListener
from eve.connections.oauth_assertion import assertion_provider
from eve.connections.oauth_flow import NamedFailures
from eve.connections.oauth_machine import machine_provider
from eve.connections.transports import env_secret
from eve.errors import (
    MCPAuthorizationFailed,
    MCPAuthorizationRequired,
    MCPConnectionError,
)
from eve.events import AuthorizationRequiredData
from eve.manifest import ConnectionEntry, HttpServer, OAuthSettings

if TYPE_CHECKING:
    from eve.sessions.oauth_tokens import GrantRows

log = logging.getLogger("eve.connections")


@dataclass(frozen=True, kw_only=True)
class StoredGrant:
    """A grant as read: the token response and client registration as JSON."""

    tokens: str | None
    expires_at: float | None
    client_info: str | None


_NONE = StoredGrant(tokens=None, expires_at=None, client_info=None)


class _Grant:
    """The SDK's ``TokenStorage`` over one principal's row (or memory, with no store)."""

    def __init__(self, link: OAuthLink) -> None:
        self.link = link
        self.rows: GrantRows | None = None
        self.memory = _NONE
        self.expires_at: float | None = None

    def _rows(self) -> GrantRows | None:
        if self.rows is None:
            lent = authorization.turn_authorization.get()
            if lent is not None and lent.store is not None:
                # imported here: the session package is loaded only where a turn lends it
                from eve.sessions.oauth_tokens import GrantRows, grant_key

                entry = self.link.entry
                assert isinstance(entry.server, HttpServer)
                self.rows = GrantRows(
                    store=lent.store(),
                    key=grant_key(entry.logical_path, entry.server.url),
                    principal=self.link.principal,
                    connection=entry.name,
                )
        return self.rows

    async def _load(self) -> StoredGrant:
        rows = self._rows()
        if rows is None:
            return self.memory
        found = await asyncio.to_thread(rows.load)
        if found is None:
            return _NONE
        return StoredGrant(
            tokens=found.tokens, expires_at=found.expires_at, client_info=found.client_info
        )

    async def get_tokens(self) -> OAuthToken | None:
        grant = await self._load()
        if grant.tokens is None:
            return None
        tokens = OAuthToken.model_validate_json(grant.tokens)
        _redact_tokens(tokens)
        self.expires_at = grant.expires_at
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        _redact_tokens(tokens)
        expires_at = None if tokens.expires_in is None else time.time() + tokens.expires_in
        self.expires_at = expires_at
        data = tokens.model_dump_json()
        rows = self._rows()
        if rows is None:
            self.memory = StoredGrant(
                tokens=data, expires_at=expires_at, client_info=self.memory.client_info
            )
            return
        await asyncio.to_thread(rows.save_tokens, data, expires_at)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        # a declared client wins over a registration stored before it was declared
        info = self.link.declared_client()
        if info is None:
            grant = await self._load()
            if grant.client_info is not None:
                info = OAuthClientInformationFull.model_validate_json(grant.client_info)
        if info is not None and info.client_secret:
            add_secret(info.client_secret)
        return info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if client_info.client_secret:
            add_secret(client_info.client_secret)
        data = client_info.model_dump_json()
        rows = self._rows()
        if rows is None:
            self.memory = StoredGrant(
                tokens=self.memory.tokens, expires_at=self.memory.expires_at, client_info=data
            )
            return
        await asyncio.to_thread(rows.save_client, data)


def _redact_tokens(tokens: OAuthToken) -> None:
    add_secret(tokens.access_token)
    if tokens.refresh_token:
        add_secret(tokens.refresh_token)


class _Provider(NamedFailures, OAuthClientProvider):
    """The SDK's provider for a person's sign-in (authorization code with PKCE)."""

    def __init__(self, link: OAuthLink, grant: _Grant, metadata: OAuthClientMetadata) -> None:
        server = link.entry.server
        assert isinstance(server, HttpServer)
        super().__init__(
            server.url,
            metadata,
            grant,
            redirect_handler=link.send_person,
            callback_handler=link.person_answered,
            client_metadata_url=link.settings.client_metadata_url,
        )
        self.link = link
        self.expiry = grant


class OAuthLink:
    """One principal's OAuth for one connection: the SDK provider and the person's wait."""

    def __init__(self, entry: ConnectionEntry, settings: OAuthSettings, principal: str) -> None:
        self.entry = entry
        self.settings = settings
        self.principal = principal
        self.redirect_url = authorization.redirect_url(settings.redirect_url)
        #: the named error of the last failed flow, for the pool to raise (``take_failure``)
        self.failure: MCPConnectionError | None = None
        #: what stops the connection's clocks while a person signs in (set by the pool)
        self.hold: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext
        self._held = contextlib.ExitStack()
        self._state: str | None = None
        self._answer: asyncio.Future[authorization.Callback] | None = None
        #: the loopback listener, open from the link's going out until the answer
        self._listening = contextlib.AsyncExitStack()
        if settings.grant == "client_credentials":
            # no person: the declared client signs in as itself (connections.oauth_machine)
            grant = _Grant(self)
            self.auth: httpx2.Auth = machine_provider(self, settings, grant, grant)
            return
        if settings.grant == "identity_assertion":
            # no person either: an ID-JAG from the enterprise IdP (connections.oauth_assertion)
            self.auth = assertion_provider(self, settings, _Grant(self))
            return
        scope = " ".join(settings.scopes) if settings.scopes else None
        secret = self._client_secret()
        metadata = OAuthClientMetadata(
            client_name=settings.client_name,
            redirect_uris=[self.redirect_url],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
            scope=scope,
        )
        self.auth = _Provider(self, _Grant(self), metadata)

    def _client_secret(self) -> str | None:
        declared = self.settings.client_secret
        if declared is None:
            return None
        return env_secret(declared, connection=self.entry.name, what="oauth client_secret")

    def declared_client(self) -> OAuthClientInformationFull | None:
        """The client registered beforehand (``oauth(client_id=...)``), if declared."""
        if self.settings.client_id is None:
            return None
        secret = self._client_secret()
        return OAuthClientInformationFull(
            client_id=self.settings.client_id,
            client_secret=secret,
            redirect_uris=[self.redirect_url],  # type: ignore[list-item]
            # RFC 6749 §2.3.1: every authorization server takes HTTP Basic for a client
            # with a password, which is what registering one beforehand usually gives
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
            grant_types=["authorization_code", "refresh_token"],
        )

    def take_failure(self) -> MCPConnectionError | None:
        failure, self.failure = self.failure, None
        return failure

    async def send_person(self, url: str) -> None:
        """The SDK's redirect handler: tell the turn's person where to sign in."""
        name = self.entry.name
        lent = authorization.turn_authorization.get()
        if lent is None or lent.notify is None:
            raise MCPAuthorizationRequired(
                f"connection {name!r} needs a person to sign in (OAuth), and this call runs "
                "where no one can be asked: run a turn with eve run, eve dev or eve serve, "
                "which show the link",
                connection=name,
            )
        state = parse_qs(urlparse(url).query).get("state", [""])[0]
        self._state = state
        self._answer = authorization.expect(
            state, seconds=self.settings.authorization_timeout_seconds
        )
        self._held.enter_context(self.hold())
        # listening before the person can follow the link
        await self._listening.enter_async_context(LoopbackListener.for_url(self.redirect_url))
        try:
            await lent.notify(
                AuthorizationRequiredData(
                    connection=name,
                    url=url,
                    timeout_seconds=self.settings.authorization_timeout_seconds,
                )
            )
        except BaseException:
            self._held.close()
            await self._listening.aclose()
            authorization.forget(state)
            raise

    async def person_answered(self) -> AuthorizationCodeResult:
        """The SDK's callback handler: the code the person came back with, or a named
        error when they refused or did not come back in time."""
        state, answer, self._state, self._answer = self._state, self._answer, None, None
        assert state is not None and answer is not None, "the SDK calls the redirect first"
        seconds = self.settings.authorization_timeout_seconds
        try:
            callback = await asyncio.wait_for(answer, seconds)
        except TimeoutError:
            raise MCPAuthorizationRequired(
                f"connection {self.entry.name!r} needs a person to sign in, and no one did "
                f"within {seconds:g}s: open the link of the authorization.required event, "
                "sign in, and send the message again",
                connection=self.entry.name,
            ) from None
        finally:
            self._held.close()
            authorization.forget(state)
            await self._listening.aclose()
        if callback.error is not None:
            detail = f" ({callback.error_description})" if callback.error_description else ""
            raise MCPAuthorizationFailed(
                f"connection {self.entry.name!r}: the authorization server answered the "
                f"sign-in with {callback.error}{detail}",
                connection=self.entry.name,
            )
        assert callback.code is not None, "authorization.complete refuses neither"
        return AuthorizationCodeResult(code=callback.code, state=callback.state, iss=callback.iss)
