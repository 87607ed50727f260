"""``AgentSetup``: a resolved agent with the model client and limits its turns run under."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from eve.authoring.deps import DepsFactory, check_deps_factory
from eve.authoring.instructions import InstructionsDefinition, Render, define_instructions
from eve.errors import ResolveAgentError, WorkspaceUnsafe
from eve.execution.events import HookDispatcher
from eve.manifest import ROOT_NODE_ID, AgentConfig, Compaction, Output
from eve.memory.access import NodeMemory
from eve.models.base import ModelClient
from eve.runtime import ResolvedAgent
from eve.runtime.resolved import (
    ResolvedDeps,
    ResolvedInstructions,
    ResolvedOutput,
    ResolvedTool,
)

DEFAULT_MAX_TURNS = 10
#: where a compiled agent's tools work when agent.py names no ``workspace``: a folder of its
#: own, never the app root, which holds every session's database and code eve imports
DEFAULT_WORKSPACE = "workspace"
#: what a workspace may neither be, contain nor lie inside: the artifacts and the session
#: databases (``.eve/sessions``), and the authored agent (``eve serve`` imports its code)
PROTECTED_PATHS = (".eve", "agent")


def workspace_for(app_root: Path, configured: str | None, *, create: bool) -> Path:
    """The workspace of a compiled agent: ``configured`` (relative to the app root) or
    ``DEFAULT_WORKSPACE``; created when ``create`` and missing.

    Raises ``WorkspaceUnsafe`` when it overlaps a protected path: the built-in tools could
    then read every session's messages or write a tool that the next start imports.
    """
    name = configured or DEFAULT_WORKSPACE
    workspace = (app_root / name).resolve()
    for protected_name in PROTECTED_PATHS:
        protected = (app_root / protected_name).resolve()
        if workspace == protected or workspace.is_relative_to(protected):
            how = f"is or lies inside {protected_name}/"
        elif protected.is_relative_to(workspace):
            how = f"contains {protected_name}/"
        else:
            continue
        raise WorkspaceUnsafe(
            f"the workspace {name!r} {how}, so the file tools could reach eve's own files "
            f"(session databases, artifacts, agent code): set workspace in agent.py to a "
            f"folder of its own, such as {DEFAULT_WORKSPACE!r} (the default)",
            workspace=name,
            conflict=protected_name,
        )
    if create:
        workspace.mkdir(parents=True, exist_ok=True)
    return workspace


def context_budget(window_tokens: int | None) -> int | None:
    """How much of the model's context window the history may fill before it is trimmed."""
    return int(window_tokens * 0.8) if window_tokens else None


@dataclass(frozen=True, kw_only=True)
class AgentSetup:
    """Everything about *what* runs: the agent, its model and its limits (``run_agent``
    takes where and for whom from a ``TurnEnvironment``). ``agent_setup`` builds one for an
    agent that has no files."""

    agent: ResolvedAgent
    #: the node's model: the first of its chain
    client: ModelClient
    #: the models asked after ``client``, in order, when it fails past its retries or is
    #: down (``define_agent(model=[...])``); empty without a chain or under ``--model``
    fallbacks: tuple[ModelClient, ...] = ()
    max_turns: int = DEFAULT_MAX_TURNS
    workspace: Path = field(default_factory=Path.cwd)
    context_budget_tokens: int | None = None
    #: the compiled sources' fingerprint: durable workflows recover only under the same one
    fingerprint: str = ""
    #: where the agent's hooks and the framework plugins receive events (``HookRelay``)
    hooks: HookDispatcher | None = None
    reasoning: str | None = None
    #: where model ids that name files (``offline/script:<path>``) are found
    app_root: Path = field(default_factory=Path.cwd)
    #: every subagent's setup by node id (``researcher/reviewer``), shared by all nodes
    subagents: Mapping[str, AgentSetup] = field(default_factory=dict)
    #: the node's memory slots bound to their stores (``execution.memory.with_memory``);
    #: None: no slots, or none bound
    memory: NodeMemory | None = None

    @property
    def models(self) -> tuple[ModelClient, ...]:
        """Every model a step may ask, in the order it asks them."""
        return (self.client, *self.fallbacks)

    def node(self, node_id: str) -> AgentSetup:
        if node_id in (ROOT_NODE_ID, self.agent.node_id):
            return self
        found = self.subagents.get(node_id)
        if found is None:
            known = ", ".join(sorted(self.subagents)) or "none"
            raise ResolveAgentError(
                f'no subagent "{node_id}" in this agent (known: {known}): run `eve compile`',
                node_id=node_id,
            )
        return found


def agent_setup(
    client: ModelClient,
    *,
    instructions: str = "",
    tools: Sequence[ResolvedTool] = (),
    max_turns: int = DEFAULT_MAX_TURNS,
    workspace: Path | None = None,
    context_budget_tokens: int | None = None,
    hooks: HookDispatcher | None = None,
    reasoning: str | None = None,
    node_id: str = ROOT_NODE_ID,
    output_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
    output_retries: int = 2,
    compaction: Compaction | None = None,
    context_window_tokens: int | None = None,
    deps: DepsFactory | None = None,
    dynamic_instructions: Render | InstructionsDefinition | None = None,
) -> AgentSetup:
    """A setup for an agent made in code (tests, notebooks, benchmarks): the instructions
    and live tools, with the default configuration; compiled agents get theirs from
    ``eve run``'s and ``eve serve``'s own preparation. ``output_schema`` and
    ``output_retries`` are ``define_agent``'s (a typed final answer); ``compaction`` and
    ``context_window_tokens`` its ``compaction`` and ``model_context_window_tokens``;
    ``deps`` its deps factory, and ``dynamic_instructions`` a function as instructions.py
    defines (its result follows ``instructions`` each turn)."""
    agent = ResolvedAgent(
        node_id=node_id,
        config=AgentConfig(
            compaction=compaction, model_context_window_tokens=context_window_tokens
        ),
        instructions=instructions,
        tools=list(tools),
        output=_output(output_schema, output_retries),
        deps=None
        if deps is None
        else ResolvedDeps(factory=check_deps_factory(deps), owner=node_id),
        dynamic_instructions=_dynamic(dynamic_instructions),
    )
    return AgentSetup(
        agent=agent,
        client=client,
        max_turns=max_turns,
        workspace=workspace or Path.cwd(),
        context_budget_tokens=context_budget_tokens,
        hooks=hooks,
        reasoning=reasoning,
    )


def _dynamic(render: Render | InstructionsDefinition | None) -> ResolvedInstructions | None:
    if render is None:
        return None
    definition = (
        render if isinstance(render, InstructionsDefinition) else define_instructions(render)
    )
    return ResolvedInstructions(render=definition.render)


def _output(
    schema: type[pydantic.BaseModel] | dict[str, Any] | None, retries: int
) -> ResolvedOutput | None:
    if schema is None:
        return None
    if isinstance(schema, dict):
        return ResolvedOutput(spec=Output(json_schema=schema, retries=retries))
    spec = Output(json_schema=schema.model_json_schema(), retries=retries)
    return ResolvedOutput(spec=spec, model=schema)
