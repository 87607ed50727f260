"""One turn of the agent compiled at ``app_root``, with a scripted model, its MCP
connections' pool closed afterwards (their servers end with it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eve.connections.pool import close_current_pool
from eve.events import SessionEvent
from eve.execution import TurnEnvironment, run_agent
from eve.execution.setup import AgentSetup
from eve.models.events import ModelEvent
from eve.models.function import FunctionModel
from eve.runtime import load_compiled_agent, resolve_agent
from tests.execution.helpers import Script


async def compiled_turn(
    app_root: Path, *responses: list[ModelEvent], **env: Any
) -> tuple[FunctionModel, list[SessionEvent]]:
    """The model (its requests) and the turn's events; ``env`` adds to the turn's
    ``TurnEnvironment`` (``forms=…``; an ``on_event`` of its own gets the events instead)."""
    loaded = load_compiled_agent(app_root)
    resolved = await resolve_agent(loaded.manifest, loaded.module_map, app_root=app_root)
    model = FunctionModel(Script(*responses))
    events: list[SessionEvent] = []
    env.setdefault("on_event", events.append)
    try:
        await run_agent(
            AgentSetup(agent=resolved, client=model),
            "go",
            env=TurnEnvironment(**env),
        )
    finally:
        await close_current_pool()
    return model, events
