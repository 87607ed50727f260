"""A compiled agent → the ``AgentSetup`` its turns run with: every node resolved, its model
client chosen, its hooks relayed.

Every edge that runs an agent needs this (``eve run``, ``eve dev``, ``eve serve``, an eve app
embedded in another ASGI app), and none of them may import another: the CLI adds compiling
stale artifacts on top, the server takes artifacts as they are.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from eve.execution.setup import DEFAULT_MAX_TURNS, AgentSetup, context_budget, workspace_for
from eve.hooks.relay import HookRelay
from eve.manifest import ROOT_NODE_ID, OpenAIApi
from eve.models.base import ModelClient
from eve.models.registry import choose_model, create_client
from eve.runtime import CompiledAgent, ResolvedAgent, resolve_agent
from eve.runtime.delegation import parent_of
from eve.runtime.resolved import ResolvedProviderTool
from eve.sandbox.bindings import bind_sandbox

#: where a one-line notice goes (the model fallback without a provider key)
Notify = Callable[[str], None]


async def build_setup(
    compiled: CompiledAgent,
    *,
    model: str | None,
    max_turns: int | None,
    notify: Notify,
    offline_fallback: bool,
) -> AgentSetup:
    """Resolve the root agent and its subagents and pick their models.

    ``model`` replaces every node's configured model; a subagent without one uses its
    caller's. ``offline_fallback``: a node whose model has no credentials runs on the
    offline model, with a notice (``eve run``, ``dev``, ``eval``), rather than raising
    ``ServedModelUnavailable`` (a server, where nobody would read the notice).
    """
    app_root = compiled.app_root
    agents = {
        node_id: await resolve_agent(
            compiled.manifest, compiled.module_map, node_id, app_root=app_root
        )
        for node_id in compiled.manifest.nodes
    }
    root = agents.pop(ROOT_NODE_ID)
    choose = functools.partial(_chain, app_root=app_root, notify=notify, fallback=offline_fallback)
    client = choose(model, root)
    subagents: dict[str, AgentSetup] = {}
    clients = {ROOT_NODE_ID: client}
    # parents before children (ids are paths), so a child without a model takes its caller's
    for node_id in sorted(agents, key=lambda n: n.count("/")):
        agent = agents[node_id]
        own = agent.config.model
        same = (own, agent.config.fallback) == (root.config.model, root.config.fallback)
        clients[node_id] = (
            choose(None, agent)
            if model is None and own is not None and not same
            else clients[parent_of(node_id)]
        )
        subagents[node_id] = _setup(agent, clients[node_id], app_root, None, subagents)
    return replace(
        _setup(root, client, app_root, max_turns, subagents),
        fingerprint=compiled.manifest.fingerprint,
    )


def _chain(
    override: str | None,
    agent: ResolvedAgent,
    *,
    app_root: Path,
    notify: Notify,
    fallback: bool,
) -> tuple[ModelClient, ...]:
    """A node's models in the order a step asks them: ``--model`` replaces the whole chain,
    and a chain whose first model runs offline for want of its key is that offline model
    alone (asking a real model after a fake one would mix the two in one conversation)."""
    config = agent.config
    first = _client(
        override,
        config.model,
        app_root=app_root,
        openai_api=config.openai_api,
        notify=notify,
        fallback=fallback,
    )
    # the offline models stand in for any provider: they run no provider tool, by design
    if override is not None and not override.startswith("offline/"):
        _tell_foreign_tools(agent, override, notify)
    if override is not None or first.model_id != config.model:
        return (first,)
    env, api = os.environ, config.openai_api
    rest = (create_client(m, app_root=app_root, env=env, openai_api=api) for m in config.fallback)
    return (first, *rest)


def _tell_foreign_tools(agent: ResolvedAgent, model: str, notify: Notify) -> None:
    # compiling warns of the chain's models; a --model chosen at run time is told here
    provider = model.partition("/")[0]
    for tool in agent.tools:
        if isinstance(tool, ResolvedProviderTool) and tool.entry.provider.provider != provider:
            owner = tool.entry.provider.provider
            notify(f"eve: {tool.name} is a tool {owner} runs itself; {model} is not offered it")


def _client(
    override: str | None,
    configured: str | None,
    *,
    app_root: Path,
    openai_api: OpenAIApi,
    notify: Notify,
    fallback: bool,
) -> ModelClient:
    if override is not None:
        return create_client(override, app_root=app_root, env=os.environ, openai_api=openai_api)
    choice = choose_model(configured, app_root=app_root, openai_api=openai_api, fallback=fallback)
    if choice.notice:
        notify(choice.notice)
    return choice.client


def _setup(
    agent: ResolvedAgent,
    models: tuple[ModelClient, ...],
    app_root: Path,
    max_turns: int | None,
    subagents: dict[str, AgentSetup],
) -> AgentSetup:
    config = agent.config
    # refused here, so eve run, eve dev and eve serve all refuse before serving a turn
    create = bool(config.builtin_tools) or agent.sandbox is not None
    workspace = workspace_for(app_root, config.workspace, create=create)
    # so is a sandbox whose provider cannot run here (SandboxUnavailable)
    bind_sandbox(workspace, agent.node_id, agent.sandbox, app_root=app_root)
    return AgentSetup(
        agent=agent,
        client=models[0],
        fallbacks=models[1:],
        max_turns=max_turns or config.limits.max_turns or DEFAULT_MAX_TURNS,
        workspace=workspace,
        context_budget_tokens=context_budget(config.model_context_window_tokens),
        hooks=HookRelay.for_hooks(agent.hooks),
        reasoning=config.reasoning,
        app_root=app_root,
        subagents=subagents,
    )
