"""A connection's resources as one tool: ``<connection>__resources`` lists them, or reads
one by URI (https://modelcontextprotocol.io/specification/2025-06-18/server/resources).

A server that declares the ``resources`` capability gets this tool in its listing, exposed
as its other tools are (through the catalog by default), so the model can follow a resource
link a tool answered with, or look at what the server offers. Reading answers each content
as an embedded resource would be (``connections.content``): text with its URI and media
type, images and documents as parts. A server tool that is itself named ``resources`` keeps
the name and the built-in is left out, since the server's own tool is what its name means.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Awaitable
from typing import Any

import mcp_types
import msgspec
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from eve.authoring.connections import TokenSource
from eve.connections.content import ResultPart, content_parts
from eve.connections.listing import ListedTool
from eve.connections.names import model_tool_name
from eve.connections.pool import CallResult, ConnectionPool
from eve.errors import MCPCallTimedOut, MCPToolFailed
from eve.manifest import ConnectionEntry
from eve.messages import TextPart

#: whether each live session's server has resources (``_offers``)
_offered: weakref.WeakKeyDictionary[ClientSession, bool] = weakref.WeakKeyDictionary()
#: the server-side name of the built-in, as a listing records it
RESOURCES_TOOL = "resources"
DESCRIPTION = (
    "List the resources this server offers (no uri), or read one (uri: a resource's URI, "
    "as a listing or a resource link gives it)."
)
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "uri": {"type": "string", "description": "the resource to read; omit to list"},
        "cursor": {"type": "string", "description": "a listing's next page"},
    },
    "additionalProperties": False,
}


async def listed_resources_tool(
    pool: ConnectionPool, entry: ConnectionEntry, token: TokenSource | None, taken: set[str]
) -> ListedTool | None:
    """The built-in as the listing records it, when the server offers resources, the
    connection's ``tools`` / ``block_tools`` admit it and no server tool has its name."""
    admitted = (
        entry.allow_tools is None or RESOURCES_TOOL in entry.allow_tools
    ) and RESOURCES_TOOL not in entry.block_tools
    if not admitted or RESOURCES_TOOL in taken:
        return None
    offers = functools.partial(_offers, seconds=entry.call_timeout_seconds)
    if not await pool.use(entry, offers, token):
        return None
    return ListedTool(
        name=model_tool_name(entry.name, RESOURCES_TOOL),
        tool=RESOURCES_TOOL,
        description=DESCRIPTION,
        input_schema=INPUT_SCHEMA,
        kind="resources",
    )


async def _offers(session: ClientSession, seconds: float) -> bool:
    """Whether the server has resources: it declares the capability and lists some or
    offers templates. The SDK's servers declare the capability with none, and a tool that
    could only answer "no resources" would be noise in every listing; asked once per
    session (a reconnect asks again)."""
    known = _offered.get(session)
    if known is None:
        capabilities = session.server_capabilities
        known = capabilities is not None and capabilities.resources is not None
        if known:
            known = await _has_some(session.list_resources(), "resources", seconds)
            known = known or await _has_some(
                session.list_resource_templates(), "resource_templates", seconds
            )
        _offered[session] = known
    return known


async def _has_some(request: Awaitable[Any], field: str, seconds: float) -> bool:
    """Whether a listing request answers with any item; a server's error answer (a method
    it does not have) is none, so a half-done resources feature never fails its tools."""
    try:
        answer = await asyncio.wait_for(request, seconds)
    except MCPError as error:
        if error.code == mcp_types.CONNECTION_CLOSED:
            raise  # the pool reconnects, as for any request
        return False
    return bool(getattr(answer, field))


async def call_resources(
    pool: ConnectionPool,
    entry: ConnectionEntry,
    token: TokenSource | None,
    data: dict[str, Any],
) -> CallResult:
    """Run the built-in: ``data`` with a ``uri`` reads it, without one lists."""

    async def run(session: ClientSession) -> CallResult:
        parts = await _resources(
            session, data, connection=entry.name, seconds=entry.call_timeout_seconds
        )
        text = "\n".join(part.text for part in parts if isinstance(part, TextPart))
        return CallResult(text=text, parts=parts)

    return await pool.use(entry, run, token)


async def _resources(
    session: ClientSession, data: dict[str, Any], *, connection: str, seconds: float
) -> list[ResultPart]:
    """The listing (as JSON text) or the read resource's contents, within ``seconds``."""
    try:
        uri = data.get("uri")
        if isinstance(uri, str):
            read = await asyncio.wait_for(session.read_resource(uri), seconds)
            return _contents(read.contents)
        cursor = data.get("cursor")
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await asyncio.wait_for(session.list_resources(params=params), seconds)
    except TimeoutError:
        raise MCPCallTimedOut(
            f"connection {connection!r}: resources did not answer within {seconds:g}s "
            "(call_timeout_seconds)",
            connection=connection,
            tool=RESOURCES_TOOL,
            seconds=seconds,
        ) from None
    except MCPError as error:
        if error.code == mcp_types.CONNECTION_CLOSED:
            raise  # the pool reconnects, as for any request
        # the server's answer about this request (an unknown URI): the model's error
        raise MCPToolFailed(
            f"connection {connection!r}: resources: {error.error.message}",
            connection=connection,
            tool=RESOURCES_TOOL,
        ) from None
    listed = [
        {
            key: value
            for key, value in {
                "uri": str(resource.uri),
                "name": resource.name,
                "mimeType": resource.mime_type,
                "description": resource.description,
            }.items()
            if value is not None
        }
        for resource in page.resources
    ]
    answer: dict[str, Any] = {"resources": listed}
    if page.next_cursor:
        answer["nextCursor"] = page.next_cursor
    return [TextPart(text=msgspec.json.encode(answer).decode())]


def _contents(
    contents: list[mcp_types.TextResourceContents | mcp_types.BlobResourceContents],
) -> list[ResultPart]:
    blocks: list[mcp_types.ContentBlock] = [
        mcp_types.EmbeddedResource(type="resource", resource=content) for content in contents
    ]
    return content_parts(blocks)
