"""``AgentSetup``: a resolved agent with the model client and limits its turns run under."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eve.execution.events import HookDispatcher
from eve.models.base import ModelClient
from eve.runtime import ResolvedAgent


@dataclass(frozen=True, kw_only=True)
class AgentSetup:
    agent: ResolvedAgent
    client: ModelClient
    max_turns: int
    workspace: Path
    context_budget_tokens: int | None
    #: the compiled sources' fingerprint: durable workflows recover only under the same one
    fingerprint: str = ""
    #: where the agent's hooks and the framework plugins receive events (``HookRelay``)
    hooks: HookDispatcher | None = None
