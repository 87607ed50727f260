"""The connection pool: one live MCP session per server per worker process (the ``mcp`` SDK).

Each server's session is owned by one task, which connects and closes it (the SDK's
transports are anyio task groups, which must be entered and left by one task); calls
from any session's turn go through that session, so a server is shared by every session
of the process; its transport is a ``transports.ServerLink``. Callers needing a session
share one connect attempt, bounded by the connection's timeout and backed off after a
failure. A tool call is sent at most once: again only when the failure proves the server
did not take it (it ended our session), and an error is classified by its origin
(``rpc_errors``): a server's own error is never taken for a dropped connection or a
timeout. Listing, which has no side effect, is retried once. A stdio server runs in a
process group of its own (the SDK starts it with ``start_new_session``) and closing the
connection ends the whole group (``connections.process_group``): ``close_pools`` at
shutdown closes every one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, assert_never

import mcp_types
import msgspec
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from eve.authoring.connections import TokenSource
from eve.connections.asking import RunningCall
from eve.connections.authorization import principal_key
from eve.connections.client_features import ClientFeatures, progress_callback
from eve.connections.clock import Deadline, loop_watch
from eve.connections.content import ResultPart, content_parts
from eve.connections.oauth_client import OAuthLink
from eve.connections.rpc_errors import Origin, described, origin, session_closed
from eve.connections.tasks import call_as_task, runs_tasks, task_support
from eve.connections.transports import ServerLink
from eve.errors import (
    MCPCallInterrupted,
    MCPCallTimedOut,
    MCPConnectionError,
    MCPResultMalformed,
    MCPServerError,
    MCPServerUnavailable,
    MCPToolFailed,
    MCPToolsChanged,
)
from eve.manifest import ConnectionEntry, HttpServer
from eve.messages import TextPart
from eve.runtime.partials import Report
from eve.runtime.server_asks import CallAsks

log = logging.getLogger("eve.connections")
#: how long closing waits for a server's owner task before cancelling it
_CLOSE_SECONDS = 5.0
#: after a failed connect, how long until the next is tried; doubled per failure up to
#: the maximum, and forgotten at the first success
_FIRST_BACKOFF = 1.0
_MAX_BACKOFF = 30.0
R = TypeVar("R")


@dataclass(frozen=True, kw_only=True)
class ServerTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    #: ``required`` or ``optional``: called as a task (the server runs tasks); else None
    task_support: str | None = None


class CallResult(msgspec.Struct, frozen=True, kw_only=True):
    """What a successful call answered: its text, its content as parts (images and documents
    too: ``connections.content``), and structured content when there is any. A Struct, not
    a dataclass: one is made per call, and a frozen dataclass's ``__init__`` costs more than
    the rest of the result's conversion (bench/mcp_call)."""

    text: str
    parts: list[ResultPart]
    structured: dict[str, Any] | None = None

    @property
    def has_media(self) -> bool:
        return any(not isinstance(part, TextPart) for part in self.parts)


class _Server:
    """One server's session and the task that owns it."""

    def __init__(
        self, entry: ConnectionEntry, token: TokenSource | None, principal: str | None = None
    ) -> None:
        self.entry = entry
        self.token = token
        self.session: ClientSession | None = None
        self.owner: asyncio.Task[None] | None = None
        self.stop = asyncio.Event()
        self.lock = asyncio.Lock()
        #: the connect under way, which every caller that needs the session awaits: a
        #: server that hangs while connecting fails them all after one timeout instead of
        #: each in turn
        self.connecting: asyncio.Task[ClientSession] | None = None
        #: the owner of a connect that timed out, being ended
        self.closing: asyncio.Task[None] | None = None
        self.listed: list[ServerTool] | None = None
        #: the last connect's failure, and when the next may be tried (backing off)
        self.failed: str | None = None
        self.backoff = 0.0
        self.retry_at = 0.0
        #: how the server is reached; it notices when the server ends our session
        self.link = ServerLink(entry, token, _oauth(entry, principal))
        #: eve's name, roots, progress and answers to the server's requests, as the
        #: session offers them (client_features)
        self.features = ClientFeatures(entry)
        #: the clocks of the connect and the listings under way (the calls' are theirs)
        self.waiting: list[Deadline] = []
        #: the timer every deadline of the loop shares (``connections.clock``)
        self.watch = loop_watch()
        if self.link.oauth is not None:
            # a person signing in stops every clock of the connection (``connections.clock``)
            self.link.oauth.hold = self._clocks_paused

    @contextlib.contextmanager
    def _clocks_paused(self) -> Iterator[None]:
        clocks = [*self.waiting, *(call.clock for call in self.features.running.calls)]
        for clock in clocks:
            clock.pause()
        try:
            yield
        finally:
            for clock in clocks:
                # the refused request is sent again after the sign-in: it gets the whole
                # time, not what the discovery and the registration before it left
                clock.renew()
                clock.resume()

    @contextlib.contextmanager
    def _bounded(self, seconds: float) -> Iterator[None]:
        """A connect or a listing within ``seconds``, the time a person spends signing in
        not counted."""
        clock = Deadline(seconds, self.watch)
        self.waiting.append(clock)
        try:
            with clock:
                yield
        finally:
            self.waiting.remove(clock)

    @property
    def name(self) -> str:
        return self.entry.name

    async def own(self, ready: asyncio.Future[ClientSession]) -> None:
        """The owner task: connect, hand the session over, hold it until asked to stop."""
        try:
            async with AsyncExitStack() as stack:
                read, write = await self.link.open(stack)
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

    def _usable(self) -> ClientSession | None:
        session = self.session
        if session is None or self.owner is None or self.owner.done() or self.link.expired:
            return None
        return None if session_closed(session) else session

    async def connected(self) -> ClientSession:
        """The live session; a new one when there is none or the last one closed."""
        session = self._usable()
        if session is not None:
            return session
        loop = asyncio.get_running_loop()
        if self.connecting is None or self.connecting.done():
            if self.failed is not None and loop.time() < self.retry_at:
                # backing off: the last connect failed a moment ago, and another at once
                # would only make this turn wait the connect timeout again
                raise MCPServerUnavailable(
                    f"{self.failed} (not retried for {self.retry_at - loop.time():.1f}s more)",
                    connection=self.name,
                )
            self.connecting = loop.create_task(self._connect(), name=f"eve-mcp-connect-{self.name}")
        # shielded: one caller cancelled (its turn ended) does not fail the others' connect
        return await asyncio.shield(self.connecting)

    async def _connect(self) -> ClientSession:
        async with self.lock:
            await self._close_owner()
            if self.closing is not None:
                await self.closing  # the last failed connect's server, ending
            self.stop = asyncio.Event()
            ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
            self.owner = asyncio.get_running_loop().create_task(
                self.own(ready), name=f"eve-mcp-{self.name}"
            )
            try:
                with self._bounded(self.entry.connect_timeout_seconds):
                    # shielded: at the deadline the owner is ended below, in the background
                    self.session = await asyncio.shield(ready)
            except MCPConnectionError:
                await self._close_owner()
                raise
            except TimeoutError:
                # the callers fail now; ending the hanging server (the SDK gives it seconds
                # to exit) goes on in the background, before the next attempt or the close
                owner, self.owner, self.session = self.owner, None, None
                assert owner is not None
                self.closing = asyncio.get_running_loop().create_task(_end(owner, connected=False))
                why = f"no answer within {self.entry.connect_timeout_seconds:g}s"
                if self.link.stderr is not None:
                    why += self.link.stderr.explain(wait_seconds=0.0)
                raise self._failing(
                    f"connection {self.name!r} ({self.entry.logical_path}) could not connect "
                    f"to its server: {why}"
                ) from None
            except Exception as error:
                await self._close_owner()
                refused = self.link.auth_failure()
                if refused is not None:
                    # not backed off: the person signs in (or the credential is fixed) and
                    # the next message connects at once
                    raise refused from None
                why = _reason(error)
                if self.link.stderr is not None:
                    why += await asyncio.to_thread(self.link.stderr.explain)
                raise self._failing(
                    f"connection {self.name!r} ({self.entry.logical_path}) could not connect "
                    f"to its server: {why}"
                ) from None
            self.failed, self.backoff = None, 0.0
            self.listed = None  # a new session is listed anew
            return self.session

    def _failing(self, message: str) -> MCPServerUnavailable:
        """A failed connect: the next waits ``backoff`` seconds, doubled each time."""
        self.backoff = min(max(self.backoff * 2, _FIRST_BACKOFF), _MAX_BACKOFF)
        self.retry_at = asyncio.get_running_loop().time() + self.backoff
        self.failed = message
        return MCPServerUnavailable(message, connection=self.name)

    async def _close_owner(self) -> None:
        owner, session, self.owner, self.session = self.owner, self.session, None, None
        if owner is not None:
            self.stop.set()
            await _end(owner, connected=session is not None)

    async def close(self) -> None:
        if self.connecting is not None and not self.connecting.done():
            self.connecting.cancel()
            with contextlib.suppress(BaseException):
                await self.connecting
        async with self.lock:
            await self._close_owner()
            if self.closing is not None:
                await self.closing

    async def tools(self) -> list[ServerTool]:
        if self.listed is not None and self._usable() is not None:
            return self.listed
        return await self._relist()

    async def _relist(self) -> list[ServerTool]:
        """List on the live session, retried once on a new one (``read``)."""
        self.listed = await self.read(self._list, "listing tools")
        return self.listed

    async def read(self, run: Callable[[ClientSession], Awaitable[R]], what: str) -> R:
        """``run`` on the live session: a request with no side effect (a listing, a
        resource read), so a transport failure or an ended session is retried once on a
        new session."""
        for attempt in (1, 2):
            session = await self.connected()
            try:
                return await run(session)
            except MCPError as error:
                refused = self.link.auth_failure()
                if refused is not None:
                    raise refused from None
                if self._origin(error, session, 0.0) is Origin.SERVER or attempt == 2:
                    raise MCPServerUnavailable(
                        f"connection {self.name!r}: {what} failed: {described(error)}",
                        connection=self.name,
                    ) from None
                log.info("MCP connection %r closed under %s; reconnecting", self.name, what)
            except ValidationError as error:
                raise MCPServerUnavailable(
                    f"connection {self.name!r}: the server's tool listing is malformed "
                    f"({_first(error)})",
                    connection=self.name,
                ) from None
            except TimeoutError:
                raise MCPServerUnavailable(
                    f"connection {self.name!r}: {what} got no answer within "
                    f"{self.entry.call_timeout_seconds:g}s",
                    connection=self.name,
                ) from None
        raise AssertionError("unreachable: the second attempt returns or raises")

    async def _list(self, session: ClientSession) -> list[ServerTool]:
        tools: list[ServerTool] = []
        cursor: str | None = None
        # a tool that requires a task is offered only when the server runs tasks: called
        # plainly it could only fail
        tasks = runs_tasks(session)
        while True:
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            with self._bounded(self.entry.call_timeout_seconds):
                page = await session.list_tools(params=params)
            tools.extend(
                ServerTool(
                    name=tool.name,
                    description=tool.description or tool.title or tool.name,
                    input_schema=dict(tool.input_schema),
                    task_support=task_support(tool) if tasks else None,
                )
                for tool in page.tools
                if tasks or task_support(tool) != "required"
            )
            cursor = page.next_cursor
            if not cursor:
                return tools

    def _origin(self, error: MCPError, session: ClientSession, elapsed: float) -> Origin:
        seconds = self.entry.call_timeout_seconds
        return origin(
            error, session=session, expired=self.link.expired, elapsed=elapsed, timeout=seconds
        )

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        schema: Mapping[str, Any] | None,
        report: Report | None = None,
        asks: CallAsks | None = None,
        resume_task: str | None = None,
    ) -> CallResult:
        """Call ``tool`` at most once: it is sent again only when the failure proves the
        server did not take it (its session had ended: a 404 to our session id), and then
        only when the new session lists it with ``schema`` (the input schema the turn's
        recorded listing has; without one, the schema this pool listed last)."""
        if self.listed is None:
            # how to call it (as a task or not) is in the listing: a turn recovered from
            # its recorded listing has not listed on this process's session yet
            await self._relist()
        try:
            # the live session without a coroutine for connected() when there is one
            session = self._usable() or await self.connected()
            return await self._call(session, tool, arguments, report, asks, resume_task)
        except _SessionEnded:
            log.info("MCP connection %r: the server ended the session; a new one", self.name)
        if schema is None:
            known = _tool(self.listed or [], tool)
            schema = known.input_schema if known is not None else None
        now = _tool(await self._relist(), tool)
        session = await self.connected()
        if now is None or (schema is not None and now.input_schema != dict(schema)):
            raise MCPToolsChanged(
                f"connection {self.name!r}: the server ended its session, and the new one "
                f"lists tool {tool!r} differently; it was not called",
                connection=self.name,
                tool=tool,
            )
        try:
            return await self._call(session, tool, arguments, report, asks, resume_task)
        except _SessionEnded:
            raise MCPServerUnavailable(
                f"connection {self.name!r}: the server ended the new session too",
                connection=self.name,
            ) from None

    async def _call(
        self,
        session: ClientSession,
        tool: str,
        arguments: Mapping[str, Any],
        report: Report | None = None,
        asks: CallAsks | None = None,
        resume_task: str | None = None,
    ) -> CallResult:
        seconds = self.entry.call_timeout_seconds
        loop = asyncio.get_running_loop()
        started = loop.time()
        # eve's clock, not the SDK's: it stops while the server's question waits on a
        # person (``connections.asking``) or a person signs in (``connections.clock``)
        clock = Deadline(seconds, self.watch)
        listed = _tool(self.listed or [], tool)
        # out on the connection until it ends: the server's requests meanwhile are its own
        running = self.features.running.calls
        running.append(call := RunningCall(asks, clock))
        try:
            if resume_task is not None or (listed is not None and listed.task_support):
                # each request of the task is bounded, the task is not (``tasks``)
                result = await call_as_task(
                    session,
                    tool,
                    dict(arguments),
                    seconds=seconds,
                    connection=self.name,
                    asks=asks,
                    report=report,
                    resume=resume_task,
                )
            else:
                with clock:
                    result = await session.call_tool(
                        tool, dict(arguments), progress_callback=progress_callback(report)
                    )
        except TimeoutError:
            raise self._timed_out(tool) from None
        except ValidationError as error:
            raise MCPResultMalformed(
                f"connection {self.name!r}: tool {tool!r} answered with no valid tool "
                f"result ({error.error_count()} problem(s), first: {_first(error)})",
                connection=self.name,
                tool=tool,
            ) from None
        except MCPError as error:
            raise self._failed(error, session, tool, loop.time() - started) from None
        finally:
            running.remove(call)
        return self._result(tool, result)

    def _failed(
        self, error: MCPError, session: ClientSession, tool: str, elapsed: float
    ) -> Exception:
        refused = self.link.auth_failure()
        if refused is not None:
            # refused before the server took the call (a 401 or a failed sign-in): the
            # transport reports a closed connection, but the tool did not run
            return refused
        found = self._origin(error, session, elapsed)
        match found:
            case Origin.EXPIRED:
                return _SessionEnded()
            case Origin.TIMEOUT:
                return self._timed_out(tool)
            case Origin.CLOSED:
                return MCPCallInterrupted(
                    f"connection {self.name!r}: the connection closed while tool {tool!r} "
                    "was running; it is not called again, since the server may have run it "
                    "(the next call reconnects)",
                    connection=self.name,
                    tool=tool,
                )
            case Origin.SERVER:
                return MCPServerError(
                    f"connection {self.name!r}: tool {tool!r}: the server answered with "
                    f"{described(error)}",
                    connection=self.name,
                    rpc_code=error.code,
                )
            case _:
                assert_never(found)

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
        text = "\n".join([part.text for part in parts if isinstance(part, TextPart)])
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


async def _end(owner: asyncio.Task[None], *, connected: bool) -> None:
    """Wait for a server's owner task to close its session (it was told to stop), then
    cancel it; an owner still connecting never reaches its wait for the stop, so waiting
    would only add the close timeout to a hanging server's failure."""
    try:
        await asyncio.wait_for(asyncio.shield(owner), _CLOSE_SECONDS if connected else 0.0)
    except BaseException:
        owner.cancel()
        with contextlib.suppress(BaseException):
            await owner


def _retrieved(task: asyncio.Task[ClientSession]) -> None:
    if not task.cancelled():
        task.exception()


def _signs_in(entry: ConnectionEntry) -> bool:
    return isinstance(entry.server, HttpServer) and entry.server.oauth is not None


def _oauth(entry: ConnectionEntry, principal: str | None) -> OAuthLink | None:
    server = entry.server
    if not isinstance(server, HttpServer) or server.oauth is None:
        return None
    assert principal is not None, "a connection that signs in is pooled by principal"
    return OAuthLink(entry, server.oauth, principal)


class _SessionEnded(Exception):
    """The server ended the session before it took the call (a 404 to our session id)."""


def _tool(listed: list[ServerTool], name: str) -> ServerTool | None:
    return next((tool for tool in listed if tool.name == name), None)


def _first(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "result"
    return f"{where}: {first['msg']}"


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
        # a connection that signs in has one session per principal: each person's calls go
        # with their own token (``connections.oauth_client``)
        principal = principal_key() if _signs_in(entry) else None
        key = entry.logical_path if principal is None else f"{entry.logical_path}\n{principal}"
        server = self._servers.get(key)
        if server is None or server.entry != entry:
            server = self._servers[key] = _Server(entry, token, principal)
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
        schema: Mapping[str, Any] | None = None,
        *,
        report: Report | None = None,
        roots: Sequence[Path] = (),
        asks: CallAsks | None = None,
        resume_task: str | None = None,
    ) -> CallResult:
        """Call the server's tool ``tool`` (listed with the input ``schema``, when the
        caller knows it); ``MCPConnectionError`` subclasses on failure. ``report`` gets
        the call's progress notifications (``client_features``); ``asks`` answers the
        server's elicitation and sampling requests while the call runs (``asking``);
        ``resume_task`` is the server's task an earlier run of the turn started for this
        call, read instead of calling again (``connections.tasks``)."""
        server = self._server(entry, token)
        server.features.set_roots(roots)
        return await server.call(tool, arguments, schema, report, asks, resume_task)

    async def use(
        self,
        entry: ConnectionEntry,
        run: Callable[[ClientSession], Awaitable[R]],
        token: TokenSource | None = None,
    ) -> R:
        """``run`` with the server's session, for requests that are not tool calls and
        have no side effect (``connections.resources``): retried once on a new session."""
        return await self._server(entry, token).read(run, "a request")

    async def close(self) -> None:
        """Close every connection (a stdio server's process group ends with it)."""
        servers, self._servers = list(self._servers.values()), {}
        await asyncio.gather(*(server.close() for server in servers))


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ConnectionPool] = (
    weakref.WeakKeyDictionary()
)


#: the loop last asked for and its pool: every tool call asks, nearly always from one loop,
#: and a weak dictionary's lookup makes a weak reference each time (bench/mcp_call)
_last: tuple[weakref.ref[asyncio.AbstractEventLoop], ConnectionPool] | None = None


def current_pool() -> ConnectionPool:
    """The pool of the running event loop (a session object belongs to the loop it was made
    in, so each loop of the process has its own)."""
    global _last
    loop = asyncio.get_running_loop()
    last = _last
    if last is not None and last[0]() is loop:
        return last[1]
    pool = _pools.get(loop)
    if pool is None:
        pool = _pools[loop] = ConnectionPool()
    _last = (weakref.ref(loop), pool)
    return pool


async def close_current_pool() -> None:
    """Close the running loop's pool, if it has one."""
    global _last
    loop = asyncio.get_running_loop()
    if _last is not None and _last[0]() is loop:
        _last = None
    pool = _pools.pop(loop, None)
    if pool is not None:
        await pool.close()
