"""What a turn records of its connections' tools: the listing, as JSON a recorder can store.

A turn lists its connections' tools once, before its first step, as one recorded step: a
turn recovered after a crash reads the recorded listing instead of asking the servers
again, so its tools cannot change under it mid-turn.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class ListedTool(msgspec.Struct, frozen=True, kw_only=True):
    """One server tool, as the model will see it."""

    #: the model-visible name (``<connection>__<tool>``, see ``eve.connections.names``)
    name: str
    #: the server's own name for it, which a call sends
    tool: str
    description: str
    input_schema: dict[str, Any]
    #: a server tool, or eve's built-in reading the server's resources
    #: (``connections.resources``); a listing recorded before there was one is all tools
    kind: Literal["tool", "resources"] = "tool"


class ListedConnection(msgspec.Struct, frozen=True, kw_only=True):
    """One connection's tools, or why there are none this turn."""

    connection: str
    tools: list[ListedTool] = []
    #: the named error (``MCPServerUnavailable: …``) when listing failed
    error: str | None = None


class ConnectionListing(msgspec.Struct, frozen=True, kw_only=True):
    """Every connection of a node, in manifest order."""

    connections: list[ListedConnection] = []


LISTING_STEP = "connections.list"
