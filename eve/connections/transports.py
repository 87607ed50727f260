"""How the pool reaches one MCP server: a stdio process or a Streamable HTTP endpoint.

Opening a transport is where the connection's declared values are read: header and ``env``
values from the environment, and ``get_token``'s result, each joining the redaction set
(``eve._redact``) as it is read, so a server that echoes one is redacted wherever eve
prints, logs or stores it. A stdio server gets only its declared environment (the SDK adds
PATH/HOME-like basics). An HTTP link watches the server's answers for the end of our
session, which tells the pool a request was refused unprocessed.
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, TextIO

import httpx2
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from eve._redact import RedactingFilter, add_secret
from eve._tls import shared_tls_context
from eve.authoring.connections import TokenSource
from eve.connections.process_group import ProcessGroup
from eve.connections.server_stderr import StderrTail
from eve.errors import MCPConnectionError, MCPServerUnavailable, MCPUnauthorized
from eve.manifest import ConnectionEntry, EnvHeader, HttpServer, StdioServer

if TYPE_CHECKING:
    from eve.connections.oauth_client import OAuthLink

#: the SDK's client-side loggers (a logger's filter sees only its own records, not its
#: children's): what they log can quote a server's error, and with it an echoed secret
_SDK_LOGGERS = (
    "mcp.client.session",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.client.auth.oauth2",
    "mcp.shared.dispatcher",
    "mcp.shared.jsonrpc_dispatcher",
)
for _name in _SDK_LOGGERS:
    logging.getLogger(_name).addFilter(RedactingFilter())

#: the Streamable HTTP header that carries the session id
SESSION_HEADER = "mcp-session-id"
#: how much of a 400's body is searched for a word about the session
_SESSION_ERROR_BYTES = 2_000


def env_secret(value: EnvHeader, *, connection: str, what: str) -> str:
    """A declared value read from the environment, a secret from now on (redacted)."""
    found = _env(value, connection=connection, what=what)
    add_secret(found[len(value.prefix) :])
    return found


def _env(value: str | EnvHeader, *, connection: str, what: str) -> str:
    if isinstance(value, str):
        return value
    found = os.environ.get(value.env)
    if found is None:
        raise MCPServerUnavailable(
            f"connection {connection!r}: {what} comes from the environment variable "
            f"{value.env}, which is not set",
            connection=connection,
        )
    return value.prefix + found


class ServerLink:
    """One server's transport, opened anew for each session."""

    def __init__(
        self, entry: ConnectionEntry, token: TokenSource | None, oauth: OAuthLink | None = None
    ) -> None:
        self.entry = entry
        self.token = token
        #: the OAuth sign-in of an ``auth=oauth(...)`` connection (``connections.oauth_client``)
        self.oauth = oauth
        #: the last 401/403 the server answered (status, ``WWW-Authenticate``), until it
        #: answers a request again
        self.refused: tuple[int, str | None] | None = None
        #: the HTTP server ended this session (see ``_seen``): it processed nothing more
        self.expired = False
        #: a stdio server's stderr, whose last line explains a server that died at start
        self.stderr: StderrTail | None = None

    def _secret(self, value: str | EnvHeader, *, what: str) -> str:
        """A declared value; one from the environment is a secret from now on."""
        if isinstance(value, EnvHeader):
            return env_secret(value, connection=self.entry.name, what=what)
        return value

    @property
    def _url(self) -> httpx2.URL | None:
        server = self.entry.server
        return httpx2.URL(server.url) if isinstance(server, HttpServer) else None

    def auth_failure(self) -> MCPConnectionError | None:
        """Why the server did not let us in, when that is why a request failed: the OAuth
        flow's named error, else the server's 401/403 with its challenge."""
        if self.oauth is not None and (failure := self.oauth.take_failure()) is not None:
            return failure
        if self.refused is None:
            return None
        status, challenge = self.refused
        fix = (
            "the token eve signed in for was refused"
            if self.oauth is not None
            else "declare auth=oauth() on the connection, or give a valid credential "
            "(get_token= or headers=)"
        )
        return MCPUnauthorized(
            f"connection {self.entry.name!r}: the server answered HTTP {status} "
            f"(WWW-Authenticate: {challenge or 'none'}): {fix}",
            connection=self.entry.name,
            status=status,
            www_authenticate=challenge,
        )

    async def open(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        self.expired = False
        server = self.entry.server
        match server:
            case StdioServer():
                # the SDK adds only PATH/HOME-like basics to what is given here: a server
                # never sees eve's own environment (provider keys) unless declared
                env = {
                    key: self._secret(value, what=f"env {key}") for key, value in server.env.items()
                }
                command, *args = server.command
                if command == "python":
                    command, *prefix = stdio_python()
                    args = [*prefix, *args]
                if os.name == "posix":  # Windows: the SDK's Job Object ends the tree
                    group = ProcessGroup()
                    # registered first, so it runs after the SDK's own close below
                    stack.push_async_callback(group.end)
                    command, args = group.wrap(command, args)
                params = StdioServerParameters(
                    command=command, args=args, env=env or None, cwd=server.cwd
                )
                self.stderr = StderrTail(_errlog())
                stack.callback(self.stderr.started)
                assert self.stderr.file is not None
                read, write = await stack.enter_async_context(
                    stdio_client(params, self.stderr.file)
                )
                self.stderr.started()
            case HttpServer():
                headers = {
                    key: self._secret(value, what=f"header {key}")
                    for key, value in server.headers.items()
                }
                if self.token is not None:
                    token = self.token()
                    if inspect.isawaitable(token):
                        token = await token
                    add_secret(token)
                    headers["Authorization"] = f"Bearer {token}"
                auth = None if self.oauth is None else self.oauth.auth
                client = await stack.enter_async_context(_http_client(headers, auth))
                client.event_hooks = {"request": [], "response": [self._seen]}
                read, write = await stack.enter_async_context(
                    streamable_http_client(server.url, http_client=client)
                )
        return read, write

    async def _seen(self, response: httpx2.Response) -> None:
        """Whether the server ended our session: the spec's answer is 404 to a request that
        carried the session id (any body); servers built on the TypeScript SDK's examples
        (the reference "everything" server) answer 400 with a JSON-RPC error about the
        session id instead. Either way the server processed nothing. A 401 or 403 from the
        server itself (not from an authorization server the OAuth flow asks) is kept with
        its challenge (``auth_failure``)."""
        if response.request.url.copy_with(query=None) == self._url:
            if response.status_code in (401, 403):
                self.refused = (response.status_code, response.headers.get("www-authenticate"))
            elif response.status_code < 400:
                self.refused = None
        if not response.request.headers.get(SESSION_HEADER):
            return
        if response.status_code == 404:
            self.expired = True
        elif response.status_code == 400 and response.headers.get("content-type", "").startswith(
            "application/json"
        ):
            # a small JSON body, read here and kept by httpx for the SDK's own read
            body = (await response.aread())[:_SESSION_ERROR_BYTES].lower()
            self.expired = b"session" in body


def stdio_python() -> list[str]:
    """What a stdio server's command ``python`` runs: the interpreter running eve, so the
    server sees the packages eve sees and the artifacts name no path of this machine. A seam
    for the tests, which fork the example's server from a process that has imported its
    packages already (``tests/forked.py``, ``script_command``)."""
    return [sys.executable]


def _errlog() -> TextIO:
    """Where a stdio server's stderr goes: eve's own, or the process's real one when
    ``sys.stderr`` was replaced by something without a file descriptor (a test runner)."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__ or sys.stderr
    return sys.stderr


def _http_client(headers: dict[str, str], auth: httpx2.Auth | None) -> httpx2.AsyncClient:
    """The client the MCP SDK's ``create_mcp_http_client`` makes (its timeouts; redirects
    left to the transport, which follows them within the server's origin), with the
    process's TLS context (eve/_tls.py) where it would build one per connection."""
    return httpx2.AsyncClient(
        headers=headers,
        auth=auth,
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        verify=shared_tls_context("httpx2"),
    )
