"""A node's MCP connections at run time: their tools listed for a turn, and bound as tools.

A turn lists the tools once (``list_connections``, which the loop runs as a recorded step,
see ``eve.connections.listing``) and binds that listing (``connection_tools``): each server
tool becomes a function tool named ``<connection>__<tool>`` whose input is checked against
the server's JSON Schema and whose execute calls the server through the process's pool.
A connection that cannot be listed gives no tools that turn, and its named error is in the
listing; a call that fails is the model's ``is_error`` result, like any tool's failure.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from eve.authoring.connections import MCPConnection
from eve.authoring.context import ToolContext
from eve.authoring.tools import Execute
from eve.connections.listing import (
    LISTING_STEP,
    ConnectionListing,
    ListedConnection,
    ListedTool,
)
from eve.connections.names import model_tool_names
from eve.errors import MCPCallInterrupted, MCPConnectionError, MCPSdkMissing
from eve.manifest import Approval, ConnectionEntry, FunctionToolEntry, StdioServer
from eve.runtime.exports import load_definition
from eve.runtime.module_map import ModuleMap
from eve.runtime.partials import running_call_partial
from eve.runtime.resolved import ResolvedConnection, ResolvedFunctionTool
from eve.runtime.server_asks import running_call_asks
from eve.runtime.validation import JsonSchemaValidator

if TYPE_CHECKING:
    from eve.connections.pool import CallResult, ConnectionPool

__all__ = [
    "LISTING_STEP",
    "ConnectionListing",
    "close_pool",
    "connection_tools",
    "list_connections",
    "pool_of",
    "resolve_connection",
]


async def resolve_connection(
    entry: ConnectionEntry, module_map: ModuleMap, node_id: str | None, *, app_root: Path
) -> ResolvedConnection:
    """The declaration with its live definition (no connecting: that waits for a turn).

    A stdio server runs in the app root (or its ``cwd`` below it), as the example's
    ``python examples/units_server.py`` assumes, whatever directory eve was started in
    (``eve -C app ...``)."""
    definition = await load_definition(
        entry, module_map, node_id, kind="connection", definition_type=MCPConnection
    )
    if isinstance(entry.server, StdioServer):
        cwd = str(app_root / (entry.server.cwd or "."))
        entry = msgspec.structs.replace(
            entry, server=msgspec.structs.replace(entry.server, cwd=cwd)
        )
    return ResolvedConnection(entry=entry, definition=definition)


def pool_of(connection: str) -> ConnectionPool:
    """The running loop's connection pool; ``MCPSdkMissing`` without the ``mcp`` package."""
    pool_module = sys.modules.get("eve.connections.pool")
    if pool_module is not None:  # imported: no import statement on every call
        pool: ConnectionPool = pool_module.current_pool()
        return pool
    try:
        from eve.connections.pool import current_pool
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith(("mcp", "httpx2")):
            raise
        raise MCPSdkMissing(
            f"connection {connection!r} needs the mcp package: pip install 'eve-durable[mcp]'",
            connection=connection,
        ) from None
    return current_pool()


async def close_pool() -> None:
    """Close the running loop's MCP connections (a stdio server's process group ends with
    its connection); nothing to do when none was opened or ``mcp`` is absent."""
    pool_module = sys.modules.get("eve.connections.pool")
    if pool_module is None:
        # no pool was ever made in this process: importing one now would import the mcp
        # SDK (a second or more) only to find nothing to close, at every exit
        return
    await pool_module.close_current_pool()


async def _listed(connection: ResolvedConnection, roots: Sequence[Path]) -> ListedConnection:
    entry = connection.entry
    try:
        pool = pool_of(entry.name)
        found = await pool.list_tools(entry, connection.definition.get_token, roots=roots)
        admitted = [
            tool
            for tool in found
            if (entry.allow_tools is None or tool.name in entry.allow_tools)
            and tool.name not in entry.block_tools
        ]
        names = model_tool_names(entry.name, [tool.name for tool in admitted])
        from eve.connections.resources import listed_resources_tool  # imports mcp

        taken = {tool.name for tool in found}
        builtin = await listed_resources_tool(pool, entry, connection.definition.get_token, taken)
    except MCPConnectionError as error:
        return ListedConnection(connection=entry.name, error=f"{type(error).__name__}: {error}")
    return ListedConnection(
        connection=entry.name,
        tools=[
            ListedTool(
                name=names[tool.name],
                tool=tool.name,
                description=tool.description,
                input_schema=tool.input_schema,
            )
            for tool in admitted
        ]
        + ([] if builtin is None else [builtin]),
    )


async def list_connections(
    connections: Sequence[ResolvedConnection], *, roots: Sequence[Path] = ()
) -> ConnectionListing:
    """Every connection's tools, listed concurrently; never raises for a server's failure.
    ``roots`` (the agent's workspace) is what a server asking for roots is told."""
    listed = await asyncio.gather(*(_listed(connection, roots) for connection in connections))
    return ConnectionListing(connections=list(listed))


def _caller(connection: ResolvedConnection, listed: ListedTool) -> Execute:
    tool = listed.tool

    async def call_server_tool(data: dict[str, Any], ctx: ToolContext) -> Any:
        pool = pool_of(connection.name)
        token = connection.definition.get_token
        if listed.kind == "resources":
            from eve.connections.resources import call_resources  # imports mcp

            return model_value(await call_resources(pool, connection.entry, token, data))
        asks = running_call_asks.get()
        # a durable turn run again after a restart: a call its first run sent is not sent
        # again; one that ran as a task is read again (``sessions.mcp_calls``)
        sent = None if asks is None else await asks.sent_before()
        if sent is not None and sent.task_id is None:
            raise MCPCallInterrupted(
                f"connection {connection.name!r}: the turn stopped (eve restarted) while "
                f"the server ran tool {tool!r}; it is not called again, since the server "
                "may have run it",
                connection=connection.name,
                tool=tool,
            )
        if asks is not None and sent is None:
            await asks.sending()
        # the turn's recorded listing is what a new session's listing is checked against
        result = await pool.call(
            connection.entry,
            tool,
            data,
            token,
            listed.input_schema,
            report=running_call_partial.get(),  # the server's progress: action.partial
            roots=(ctx.workspace,),
            asks=asks,  # the server's elicitation and sampling (connections.asking)
            resume_task=None if sent is None else sent.task_id,
        )
        return model_value(result)

    return call_server_tool


def model_value(result: CallResult) -> Any:
    """What a tool returns of a server's answer: its parts when it has images or
    documents (they reach the model as such), its structured content when it has no text,
    else its text."""
    if result.has_media:
        return result.parts
    if not result.text and result.structured is not None:
        return result.structured
    return result.text


def _tool(connection: ResolvedConnection, listed: ListedTool) -> ResolvedFunctionTool:
    entry = connection.entry
    rule = connection.definition.approval_for(listed.tool)
    declaration = FunctionToolEntry(
        name=listed.name,
        description=f"{listed.description} (MCP server {entry.name}: {entry.description})",
        logical_path=entry.logical_path,
        source_id=entry.source_id,
        input_schema=listed.input_schema,
        approval=Approval(kind=rule.kind),
        deferred=entry.expose == "catalog",
    )
    return ResolvedFunctionTool(
        entry=declaration,
        execute=_caller(connection, listed),
        validator=JsonSchemaValidator(listed.input_schema),
        approval=rule,
        connection=entry.name,
    )


def connection_tools(
    connections: Sequence[ResolvedConnection], listing: ConnectionListing
) -> list[ResolvedFunctionTool]:
    """The listed tools as function tools, in listing order (a connection the listing names
    that is no longer declared gives none)."""
    by_name = {connection.name: connection for connection in connections}
    return [
        _tool(by_name[listed.connection], tool)
        for listed in listing.connections
        if listed.connection in by_name
        for tool in listed.tools
    ]
