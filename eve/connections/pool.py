"""The connection pool: one live MCP session per server per worker process (the ``mcp`` SDK).

Each server's session is owned by one task, which connects and closes it (the SDK's
transports are anyio task groups, which must be entered and left by one task); calls
from any session's turn go through that session, so a server is shared by every session
of the process. A call that finds the connection closed (the server exited, the network
dropped) reconnects once and tries again; a call that outlives the connection's timeout
fails with ``MCPCallTimedOut`` and leaves the connection as it is. A stdio server runs in a
process group of its own (the SDK starts it with ``start_new_session``) and closing the
connection ends the whole group (``connections.process_group``): ``close_pools`` at
shutdown closes every one.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import sys
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

import mcp_types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from eve.authoring.connections import TokenSource
from eve.connections.client_features import (
    ClientFeatures,
    progress_callback,
    runs_without_task,
)
from eve.connections.content import ResultPart, content_parts
from eve.connections.process_group import ProcessGroup
from eve.connections.server_stderr import StderrTail
from eve.errors import (
    MCPCallTimedOut,
    MCPConnectionError,
    MCPServerUnavailable,
    MCPToolFailed,
)
from eve.manifest import ConnectionEntry, EnvHeader, HttpServer, StdioServer
from eve.messages import TextPart
from eve.runtime.partials import Report

log = logging.getLogger("eve.connections")
R = TypeVar("R")

#: how long closing waits for a server's owner task before cancelling it
_CLOSE_SECONDS = 5.0


@dataclass(frozen=True, kw_only=True)
class ServerTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class CallResult:
    """What a successful call answered: its text, its content as parts (images and documents
    too: ``connections.content``), and structured content when there is any."""

    text: str
    parts: list[ResultPart]
    structured: dict[str, Any] | None = None

    @property
    def has_media(self) -> bool:
        return any(not isinstance(part, TextPart) for part in self.parts)


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


class _Server:
    """One server's session and the task that owns it."""

    def __init__(self, entry: ConnectionEntry, token: TokenSource | None) -> None:
        self.entry = entry
        self.token = token
        self.session: ClientSession | None = None
        self.owner: asyncio.Task[None] | None = None
        self.stop = asyncio.Event()
        self.lock = asyncio.Lock()
        self.listed: list[ServerTool] | None = None
        #: a stdio server's stderr, whose last line explains a server that died at start
        self.stderr: StderrTail | None = None
        #: eve's name, roots and progress, as the session offers them (client_features)
        self.features = ClientFeatures()

    @property
    def name(self) -> str:
        return self.entry.name

    async def transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        server = self.entry.server
        match server:
            case StdioServer():
                env = {
                    key: _env(value, connection=self.name, what=f"env {key}")
                    for key, value in server.env.items()
                }
                command, *args = server.command
                if command == "python":
                    # the interpreter running eve: the server sees the packages eve sees,
                    # and the artifacts name no path of this machine
                    command = sys.executable
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
                    key: _env(value, connection=self.name, what=f"header {key}")
                    for key, value in server.headers.items()
                }
                if self.token is not None:
                    token = self.token()
                    if inspect.isawaitable(token):
                        token = await token
                    headers["Authorization"] = f"Bearer {token}"
                client = await stack.enter_async_context(create_mcp_http_client(headers=headers))
                read, write = await stack.enter_async_context(
                    streamable_http_client(server.url, http_client=client)
                )
        return read, write

    async def own(self, ready: asyncio.Future[ClientSession]) -> None:
        """The owner task: connect, hand the session over, hold it until asked to stop."""
        try:
            async with AsyncExitStack() as stack:
                read, write = await self.transport(stack)
                session = await stack.enter_async_context(
                    ClientSession(read, write, **self.features.session_options())
                )
                await session.initialize()
                ready.set_result(session)
                await self.stop.wait()
        except BaseException as error:
            if not ready.done():
                # a cancelled future is never "an exception nobody retrieved" when the loop
                # ends with the connection half open (asyncio.run cancels the owner)
                if isinstance(error, asyncio.CancelledError):
                    ready.cancel()
                else:
                    ready.set_exception(error)
            elif not isinstance(error, asyncio.CancelledError):
                log.warning("MCP connection %r closed with %s", self.name, type(error).__name__)
            if isinstance(error, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise

    async def connected(self) -> ClientSession:
        async with self.lock:
            if self.session is not None and self.owner is not None and not self.owner.done():
                return self.session
            await self._close_owner()
            self.stop = asyncio.Event()
            ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
            self.owner = asyncio.get_running_loop().create_task(
                self.own(ready), name=f"eve-mcp-{self.name}"
            )
            try:
                self.session = await asyncio.wait_for(
                    asyncio.shield(ready), self.entry.connect_timeout_seconds
                )
            except MCPConnectionError:
                await self._close_owner()
                raise
            except (TimeoutError, Exception) as error:
                await self._close_owner()
                why = (
                    f"no answer within {self.entry.connect_timeout_seconds:g}s"
                    if isinstance(error, TimeoutError)
                    else _reason(error)
                )
                if self.stderr is not None:
                    why += await asyncio.to_thread(self.stderr.explain)
                raise MCPServerUnavailable(
                    f"connection {self.name!r} ({self.entry.logical_path}) could not connect "
                    f"to its server: {why}",
                    connection=self.name,
                ) from None
            self.listed = None
            return self.session

    async def _close_owner(self) -> None:
        owner, self.owner, self.session = self.owner, None, None
        if owner is None:
            return
        self.stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(owner), _CLOSE_SECONDS)
        except BaseException:
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner

    async def close(self) -> None:
        async with self.lock:
            await self._close_owner()

    async def reconnect(self, broken: ClientSession) -> ClientSession:
        """A fresh session, unless another call already replaced ``broken``."""
        async with self.lock:
            if self.session is broken:
                await self._close_owner()
        return await self.connected()

    async def tools(self) -> list[ServerTool]:
        if self.listed is not None and self.session is not None:
            return self.listed
        listed = await self._with_reconnect(self._list)
        self.listed = listed
        return listed

    async def _list(self, session: ClientSession) -> list[ServerTool]:
        tools: list[ServerTool] = []
        cursor: str | None = None
        while True:
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await asyncio.wait_for(
                session.list_tools(params=params), self.entry.call_timeout_seconds
            )
            tools.extend(
                ServerTool(
                    name=tool.name,
                    description=tool.description or tool.title or tool.name,
                    input_schema=dict(tool.input_schema),
                )
                for tool in page.tools
                if runs_without_task(tool)
            )
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call(
        self, tool: str, arguments: Mapping[str, Any], report: Report | None = None
    ) -> CallResult:
        async def call(session: ClientSession) -> CallResult:
            seconds = self.entry.call_timeout_seconds
            on_progress = progress_callback(report)
            try:
                result = await asyncio.wait_for(
                    session.call_tool(
                        tool,
                        dict(arguments),
                        read_timeout_seconds=seconds,
                        progress_callback=on_progress,
                    ),
                    seconds + 1.0,  # the SDK's own timeout answers first; this one backs it
                )
            except TimeoutError:
                raise self._timed_out(tool) from None
            return self._result(tool, result)

        return await self._with_reconnect(call, tool=tool)

    def _timed_out(self, tool: str) -> MCPCallTimedOut:
        seconds = self.entry.call_timeout_seconds
        return MCPCallTimedOut(
            f"connection {self.name!r}: tool {tool!r} did not answer within {seconds:g}s "
            "(call_timeout_seconds)",
            connection=self.name,
            tool=tool,
            seconds=seconds,
        )

    def _result(self, tool: str, result: mcp_types.CallToolResult) -> CallResult:
        parts = content_parts(result.content)
        text = "\n".join(part.text for part in parts if isinstance(part, TextPart))
        if result.is_error:
            raise MCPToolFailed(
                f"connection {self.name!r}: tool {tool!r} failed: {text or 'no message'}",
                connection=self.name,
                tool=tool,
            )
        structured = result.structured_content
        return CallResult(
            text=text, parts=parts, structured=dict(structured) if structured else None
        )

    async def _with_reconnect(
        self, run: Callable[[ClientSession], Awaitable[R]], *, tool: str | None = None
    ) -> R:
        session = await self.connected()
        try:
            return await run(session)
        except MCPError as error:
            if tool is not None and error.code == mcp_types.REQUEST_TIMEOUT:
                raise self._timed_out(tool) from None
            if error.code != mcp_types.CONNECTION_CLOSED:
                raise MCPServerUnavailable(
                    f"connection {self.name!r}: the server answered with error "
                    f"{error.code}: {error.error.message}",
                    connection=self.name,
                ) from None
        except TimeoutError:
            raise MCPServerUnavailable(
                f"connection {self.name!r}: listing tools got no answer within "
                f"{self.entry.call_timeout_seconds:g}s",
                connection=self.name,
            ) from None
        log.info("MCP connection %r closed under a call; reconnecting once", self.name)
        session = await self.reconnect(session)
        try:
            return await run(session)
        except MCPError as error:
            if tool is not None and error.code == mcp_types.REQUEST_TIMEOUT:
                raise self._timed_out(tool) from None
            raise MCPServerUnavailable(
                f"connection {self.name!r}: the server went away and the reconnect failed "
                f"too ({error.error.message})",
                connection=self.name,
            ) from None


def _errlog() -> TextIO:
    """Where a stdio server's stderr goes: eve's own, or the process's real one when
    ``sys.stderr`` was replaced by something without a file descriptor (a test runner)."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__ or sys.stderr
    return sys.stderr


def _reason(error: BaseException) -> str:
    """The first real failure inside the transports' task groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"


class ConnectionPool:
    """The servers of one event loop, by connection file (``logical_path``)."""

    def __init__(self) -> None:
        self._servers: dict[str, _Server] = {}

    def _server(self, entry: ConnectionEntry, token: TokenSource | None) -> _Server:
        server = self._servers.get(entry.logical_path)
        if server is None or server.entry != entry:
            server = self._servers[entry.logical_path] = _Server(entry, token)
        return server

    async def list_tools(
        self,
        entry: ConnectionEntry,
        token: TokenSource | None = None,
        *,
        roots: Sequence[Path] = (),
    ) -> list[ServerTool]:
        """The server's tools (listed once per connection, again after a reconnect);
        ``roots`` are what the server is told when it asks (``client_features``)."""
        server = self._server(entry, token)
        server.features.set_roots(roots)
        return await server.tools()

    async def call(
        self,
        entry: ConnectionEntry,
        tool: str,
        arguments: Mapping[str, Any],
        token: TokenSource | None = None,
        *,
        report: Report | None = None,
        roots: Sequence[Path] = (),
    ) -> CallResult:
        """Call the server's tool ``tool``; ``MCPConnectionError`` subclasses on failure.
        ``report`` gets the call's progress notifications (``client_features``)."""
        server = self._server(entry, token)
        server.features.set_roots(roots)
        return await server.call(tool, arguments, report)

    async def use(
        self,
        entry: ConnectionEntry,
        run: Callable[[ClientSession], Awaitable[R]],
        token: TokenSource | None = None,
    ) -> R:
        """``run`` with the server's session (reconnected as a call would be), for the
        requests that are not tool calls (``connections.resources``)."""
        return await self._server(entry, token)._with_reconnect(run)

    async def close(self) -> None:
        """Close every connection (a stdio server's process group ends with it)."""
        servers, self._servers = list(self._servers.values()), {}
        await asyncio.gather(*(server.close() for server in servers))


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ConnectionPool] = (
    weakref.WeakKeyDictionary()
)


def current_pool() -> ConnectionPool:
    """The pool of the running event loop (a session object belongs to the loop it was made
    in, so each loop of the process has its own)."""
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        pool = _pools[loop] = ConnectionPool()
    return pool


async def close_current_pool() -> None:
    """Close the running loop's pool, if it has one."""
    pool = _pools.pop(asyncio.get_running_loop(), None)
    if pool is not None:
        await pool.close()
