"""What ``eve run`` and ``eve dev`` share: fresh artifacts, the resolved agent, the model.

On fresh artifacts nothing here loads the compiler: the check is ``eve.artifacts`` and the
compiler is imported only to recompile stale ones.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import click

from eve.artifacts import check_artifacts
from eve.errors import CompileFailed
from eve.execution.setup import DEFAULT_MAX_TURNS, AgentSetup, context_budget, workspace_for
from eve.hooks.relay import HookRelay
from eve.manifest import ROOT_NODE_ID, OpenAIApi
from eve.models.base import ModelClient
from eve.models.registry import choose_model, create_client
from eve.runtime import ResolvedAgent, load_compiled_agent, resolve_agent
from eve.runtime.delegation import parent_of
from eve.tracing.provider import install_from_environment


def ensure_compiled(app_root: Path) -> bool:
    """Compile when the artifacts are stale; True when it did. Raises ``CompileFailed``."""
    if check_artifacts(app_root).fresh:
        return False
    from eve.compiler import compile_to_disk
    from eve.compiler.diagnostics import format_diagnostic

    try:
        compile_to_disk(app_root)
    except CompileFailed as failure:
        for diagnostic in failure.diagnostics:
            if diagnostic.severity == "error":
                click.echo(format_diagnostic(diagnostic), err=True)
        raise
    return True


async def prepare(app_root: Path, *, model: str | None, max_turns: int | None) -> AgentSetup:
    """Compile if needed, resolve the root agent and its subagents and pick their models.

    ``model`` replaces every node's configured model; a subagent without one uses its
    caller's. Sets up a tracer provider first when ``OTEL_*`` asks for one
    (``eve.tracing.provider``).
    """
    install_from_environment()
    if ensure_compiled(app_root):
        click.echo("eve: agent/ changed since the last compile; recompiled .eve/", err=True)
    loaded = load_compiled_agent(app_root)
    agents = {
        node_id: await resolve_agent(loaded.manifest, loaded.module_map, node_id, app_root=app_root)
        for node_id in loaded.manifest.nodes
    }
    root = agents.pop(ROOT_NODE_ID)
    client = _client(model, root.config.model, app_root, root.config.openai_api)
    subagents: dict[str, AgentSetup] = {}
    clients = {ROOT_NODE_ID: client}
    # parents before children (ids are paths), so a child without a model takes its caller's
    for node_id in sorted(agents, key=lambda n: n.count("/")):
        agent = agents[node_id]
        own = agent.config.model
        clients[node_id] = (
            _client(None, own, app_root, agent.config.openai_api)
            if model is None and own is not None and own != root.config.model
            else clients[parent_of(node_id)]
        )
        subagents[node_id] = _setup(agent, clients[node_id], app_root, None, subagents)
    return replace(
        _setup(root, client, app_root, max_turns, subagents),
        fingerprint=loaded.manifest.fingerprint,
    )


def _client(
    override: str | None, configured: str | None, app_root: Path, openai_api: OpenAIApi
) -> ModelClient:
    if override is not None:
        return create_client(override, app_root=app_root, env=os.environ, openai_api=openai_api)
    choice = choose_model(configured, app_root=app_root, openai_api=openai_api)
    if choice.notice:
        click.echo(choice.notice, err=True)
    return choice.client


def _setup(
    agent: ResolvedAgent,
    client: ModelClient,
    app_root: Path,
    max_turns: int | None,
    subagents: dict[str, AgentSetup],
) -> AgentSetup:
    config = agent.config
    return AgentSetup(
        agent=agent,
        client=client,
        max_turns=max_turns or config.limits.max_turns or DEFAULT_MAX_TURNS,
        # refused here, so eve run, eve dev and eve serve all refuse before serving a turn
        workspace=workspace_for(app_root, config.workspace, create=bool(config.builtin_tools)),
        context_budget_tokens=context_budget(config.model_context_window_tokens),
        hooks=HookRelay.for_hooks(agent.hooks),
        reasoning=config.reasoning,
        app_root=app_root,
        subagents=subagents,
    )
