"""A turn's MCP tools: listed once as a recorded value, then added to the turn's tools.

A recovered turn reads the listing its first run recorded, so its tools cannot change
mid-turn; a connection that could not be listed is a ``connection.failed`` event and the
turn goes on without that server's tools.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from eve.events import ConnectionFailedData
from eve.execution.checkpoints import StepRecorder
from eve.runtime.automatic import with_catalog_tools
from eve.runtime.connections import (
    LISTING_STEP,
    ConnectionListing,
    connection_tools,
    list_connections,
)
from eve.runtime.resolved import ResolvedAgent, ResolvedTool


async def with_connections(
    agent: ResolvedAgent,
    tools: Mapping[str, ResolvedTool],
    *,
    recorder: StepRecorder,
    emit: Callable[[ConnectionFailedData], Awaitable[None]],
) -> dict[str, ResolvedTool]:
    """``tools`` with ``agent``'s MCP tools for this turn (and the catalog bound again)."""
    if not agent.connections:
        return dict(tools)
    listing = await recorder.value(
        LISTING_STEP, lambda: list_connections(agent.connections), ConnectionListing
    )
    for listed in listing.connections:
        if listed.error is not None:
            await emit(ConnectionFailedData(connection=listed.connection, error=listed.error))
    added = connection_tools(agent.connections, listing)
    skills = [skill.entry for skill in agent.skills]
    return {t.name: t for t in with_catalog_tools(list(tools.values()), skills, added)}
