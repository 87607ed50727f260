"""The ``mcp`` channel kind: the agent as an MCP server over Streamable HTTP.

Four tools reach the agent's durable sessions (``eve.channels.mcp_tools``): ``agent_start``,
``agent_update``, ``agent_get`` and ``agent_cancel``. Each answers a ``TurnView`` folded
from the session's event log, after waiting a bounded time for the turn to settle, with a
progress notification for each event worth telling while it waits (when the caller sent a
progress token). A turn longer than the wait does not hold the request: the answer says
``running`` and which call reads it later.

The MCP server is stateless (the SDK's ``stateless`` Streamable HTTP mode, one server per
request): the session log is the state, so any worker answers any call, a dropped
connection loses nothing, and a restart only ends the requests that were open.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, assert_never

import msgspec
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolRequestParams,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from eve._redact import redact
from eve._version import __version__
from eve.channels.mcp_tools import (
    OUTPUT_SCHEMA,
    TOOLS,
    CancelArgs,
    GetArgs,
    StartArgs,
    ToolArgs,
    UpdateArgs,
    decode_args,
    object_schema,
)
from eve.channels.mcp_turns import Report, TurnFold, TurnView, watch
from eve.channels.mount import ChannelMount
from eve.channels.sessions import ChannelSessions
from eve.errors import EveError, IdempotencyKeyReused, Unauthorized
from eve.sessions import Accepted, InputResponse
from eve.sessions.database_errors import fail_fast, first_line, scrub, unavailable

log = logging.getLogger("eve.channels.mcp")


class Options(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``mcp(...)`` in ``agent/channels/<name>.py``."""

    #: how long a call waits for its turn to settle when it does not say (``agent_get``
    #: reads without waiting unless it says)
    wait_seconds: float = 20.0
    #: the longest wait a call may ask for: below the request timeout of the callers
    #: (60 s in the MCP SDKs), so a long turn answers ``running`` rather than time out
    max_wait_seconds: float = 50.0

    def __post_init__(self) -> None:
        if not 0 <= self.wait_seconds <= self.max_wait_seconds:
            raise ValueError("wait_seconds must be between 0 and max_wait_seconds")


def routes(mount: ChannelMount[Options]) -> list[BaseRoute]:
    """One endpoint at the channel's path, as MCP's Streamable HTTP transport has it."""
    return [Route(mount.path, endpoint=_Endpoint(mount), methods=["GET", "POST", "DELETE"])]


class _Endpoint:
    """Authenticate the request, then serve it with an MCP server bound to its principal."""

    def __init__(self, mount: ChannelMount[Options]) -> None:
        self.mount = mount
        self.tools = [_tool(name) for name in TOOLS]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            principal = await self.mount.authenticate(Request(scope, receive))
        except Unauthorized as refused:
            await _refusal(refused)(scope, receive, send)
            return
        calls = _Calls(self.mount.sessions(principal), self.mount.options, self.mount.name)
        server = self._server(calls)
        # stateless: a manager per request, whose task group lives as long as the request
        # (a channel's routes have no lifespan of their own to run one in)
        manager = StreamableHTTPSessionManager(server, stateless=True)
        async with manager.run():
            await manager.handle_request(scope, receive, send)

    def _server(self, calls: _Calls) -> Server[Any]:
        agent = self.mount.setup.agent

        async def list_tools(
            ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
        ) -> ListToolsResult:
            return ListToolsResult(tools=self.tools)

        async def call_tool(
            ctx: ServerRequestContext[Any], params: CallToolRequestParams
        ) -> CallToolResult:
            if params.name not in TOOLS:
                # a tool that is not there is the protocol's error, not the tool's
                raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")

            async def report(index: int, message: str) -> None:
                await ctx.session.report_progress(index, None, message)

            return await calls.answer(params.name, params.arguments, report)

        return Server(
            f"eve:{self.mount.name}",
            version=__version__,
            instructions=agent.config.description,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )


def _tool(name: str) -> Tool:
    kind, description = TOOLS[name]
    reads = name == "agent_get"
    return Tool(
        name=name,
        description=description,
        input_schema=object_schema(kind),
        output_schema=OUTPUT_SCHEMA,
        annotations=ToolAnnotations(
            read_only_hint=reads,
            destructive_hint=name == "agent_cancel",
            idempotent_hint=reads,
            open_world_hint=not reads,
        ),
    )


class _Calls:
    """The four tools over the sessions the caller may reach."""

    def __init__(self, sessions: ChannelSessions, options: Options, channel: str) -> None:
        self.sessions = sessions
        self.options = options
        self.channel = channel

    async def answer(
        self, name: str, arguments: dict[str, Any] | None, report: Report
    ) -> CallToolResult:
        try:
            with fail_fast():
                view = await self.run(decode_args(name, arguments), report)
        except EveError as error:
            return _failed(error.code, str(error))
        except Exception as error:
            return _unexpected(name, error)
        text = msgspec.json.encode(view).decode()
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=msgspec.to_builtins(view),
        )

    async def run(self, args: ToolArgs, report: Report) -> TurnView:
        match args:
            case StartArgs():
                started = await self._keyed(
                    args.idempotency_key,
                    lambda key: self.sessions.create(args.message, key=key),
                )
                fold = TurnFold(session_id=started.session_id, turn_id=started.turn_id)
            case UpdateArgs():
                fold = await self._update(args)
            case GetArgs():
                fold = TurnFold(session_id=args.session_id, turn_id=args.turn_id)
                return await self._watched(fold, args.wait or 0.0, report)
            case CancelArgs():
                stopping = await self.sessions.cancel(args.session_id)
                fold = TurnFold(session_id=args.session_id, stopping=stopping)
                view = await self._watched(fold, args.wait, report)
                return msgspec.structs.replace(view, cancelled=stopping)
            case _:
                assert_never(args)
        return await self._watched(fold, args.wait, report)

    async def _update(self, args: UpdateArgs) -> TurnFold:
        session_id = args.session_id
        if args.message is not None:
            message = args.message
            sent = await self._keyed(
                args.idempotency_key,
                lambda key: self.sessions.send(session_id, message, key=key),
            )
            return TurnFold(session_id=session_id, turn_id=sent.turn_id)
        answers = args.answers or []
        responses = [InputResponse(request_id=a.request_id, option_id=a.option_id) for a in answers]
        await self._keyed(
            args.idempotency_key,
            lambda key: self.sessions.respond(session_id, responses, key=key),
        )
        # the waiting turn is the latest that started: a parked turn holds its session's place
        return TurnFold(session_id=session_id, answered=frozenset(a.request_id for a in answers))

    async def _keyed(
        self, key: str | None, call: Callable[[str | None], Awaitable[Accepted]]
    ) -> Accepted:
        """``call(key)`` with the caller's key scoped to this channel, so it never meets an
        ``Idempotency-Key`` of the HTTP API or of another channel."""
        if key is None:
            return await call(None)
        try:
            return await call(f"mcp:{self.channel}:{key}")
        except IdempotencyKeyReused:
            raise IdempotencyKeyReused(
                f"idempotency_key {key!r} was already used for another call with other "
                "arguments; use a new key for a new request",
                key=key,
            ) from None

    async def _watched(self, fold: TurnFold, wait: float | None, report: Report) -> TurnView:
        waits = self.options.wait_seconds if wait is None else wait
        waits = min(waits, self.options.max_wait_seconds)
        watched = await watch(self.sessions, fold, wait=waits, report=report)
        return watched.view(wait_seconds=self.options.wait_seconds)


def _failed(code: str, message: str) -> CallToolResult:
    """A tool's error as MCP has it: in the result, for the caller's model to read."""
    message = redact(message)
    return CallToolResult(
        content=[TextContent(type="text", text=f"{code}: {message}")],
        structured_content={"error": code, "message": message},
        is_error=True,
    )


def _unexpected(name: str, error: Exception) -> CallToolResult:
    """A database out of reach is its named error; anything else is logged, and the caller
    reads only that it happened (an internal message may hold what it must not see)."""
    lost = unavailable(error)
    if lost is not None:
        log.warning("mcp %s: %s: %s", name, lost, scrub(first_line(error)))
        return _failed(lost.code, str(lost))
    log.error("mcp %s: internal error\n%s", name, scrub("".join(traceback.format_exception(error))))
    return _failed("internal_error", "internal error; see the server log")


def _refusal(error: Unauthorized) -> Response:
    """401 with a JSON-RPC error the MCP clients surface as the request's error."""
    body = JSONRPCError(
        jsonrpc="2.0",
        id=None,
        error=ErrorData(code=INVALID_REQUEST, message=f"{error.code}: {error}"),
    )
    return Response(
        body.model_dump_json(by_alias=True, exclude_unset=True),
        status_code=error.http_status,
        media_type="application/json",
        headers={"www-authenticate": "Bearer"},
    )
