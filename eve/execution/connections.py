"""A turn's MCP tools: listed once per turn as a recorded value, then added to its tools.

A connection exposed as tools (``expose="tools"``) is listed when the turn starts: its tools
are in the first request. One exposed through the catalog (the default) is listed only when
the turn first needs it, when the model searches the catalog or calls one of its tools
through ``eve__tool``: a turn that never does starts no server and imports no ``mcp``. The
loop stops the step's part before that call (``NeedsListing``), lists between parts and goes
on. A recovered turn reads the listings its first run recorded, so its tools cannot change
mid-turn; a connection that could not be listed is a ``connection.failed`` event and the
turn goes on without that server's tools.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

from eve.builtins.automatic import CALL_TOOL, SEARCH_TOOL
from eve.connections.names import SEPARATOR
from eve.events import ConnectionFailedData
from eve.execution.recording import RecordKind, StepRecorder
from eve.messages import ToolCall
from eve.runtime.automatic import with_catalog_tools
from eve.runtime.connections import (
    LISTING_STEP,
    ConnectionListing,
    connection_tools,
    list_connections,
)
from eve.runtime.resolved import ResolvedAgent, ResolvedConnection, ResolvedTool

#: the recorded listing of the connections exposed through the catalog
CATALOG_LISTING_STEP = LISTING_STEP + ".catalog"

Emit = Callable[[ConnectionFailedData], Awaitable[None]]
_LISTINGS: RecordKind[ConnectionListing] = RecordKind(ConnectionListing, "an MCP listing")


class TurnConnections:
    """Which of a node's connections this turn has listed, and binding their tools."""

    def __init__(
        self,
        agent: ResolvedAgent,
        recorder: StepRecorder,
        emit: Emit,
        *,
        workspace: Path | None = None,
    ) -> None:
        self.agent = agent
        #: the servers' roots (``connections.client_features``)
        self.roots = () if workspace is None else (workspace,)
        self.recorder = recorder
        self.emit = emit
        self.servers = [c.name for c in agent.connections if c.entry.expose == "catalog"]
        #: the catalog's connections, until the turn lists them
        self.pending: list[ResolvedConnection] = [
            c for c in agent.connections if c.entry.expose == "catalog"
        ]

    async def start(self, tools: Mapping[str, ResolvedTool]) -> dict[str, ResolvedTool]:
        """``tools`` with the tools of the connections every request offers."""
        if not self.agent.connections:
            return dict(tools)
        eager = [c for c in self.agent.connections if c.entry.expose == "tools"]
        return await self._with(eager, LISTING_STEP, tools)

    async def list_catalog(self, tools: Mapping[str, ResolvedTool]) -> dict[str, ResolvedTool]:
        """``tools`` with the catalog's connections' tools, listed now (or as recorded)."""
        pending, self.pending = self.pending, []
        return await self._with(pending, CATALOG_LISTING_STEP, tools)

    def needs_listing(self, call: ToolCall) -> bool:
        """Whether ``call`` (as the model made it) needs the catalog's servers listed:
        a search of the catalog, or a call through ``eve__tool`` of one of their tools."""
        if not self.pending:
            return False
        if call.name == SEARCH_TOOL:
            return True
        return call.name == CALL_TOOL and self.names_pending_tool(call)

    def names_pending_tool(self, call: ToolCall) -> bool:
        """``call`` is an ``eve__tool`` call naming a tool of a server not listed yet."""
        if call.name != CALL_TOOL or not self.pending:
            return False  # every call of every step asks: most are neither
        name = call.input.get("name")
        prefixes = tuple(c.name + SEPARATOR for c in self.pending)
        return isinstance(name, str) and name.startswith(prefixes)

    async def _with(
        self,
        connections: Sequence[ResolvedConnection],
        key: str,
        tools: Mapping[str, ResolvedTool],
    ) -> dict[str, ResolvedTool]:
        added: list[ResolvedTool] = []
        if connections:
            listing = await self.recorder.record(
                key, lambda: list_connections(connections, roots=self.roots), _LISTINGS
            )
            for listed in listing.connections:
                if listed.error is not None:
                    failed = ConnectionFailedData(connection=listed.connection, error=listed.error)
                    await self.emit(failed)
            added = list(connection_tools(connections, listing))
        skills = [skill.entry for skill in self.agent.skills]
        bound = with_catalog_tools(list(tools.values()), skills, added, self.servers)
        return {t.name: t for t in bound}
