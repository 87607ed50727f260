"""What ``eve run`` and ``eve dev`` share: fresh artifacts, the resolved agent, the model."""

from __future__ import annotations

import os
from pathlib import Path

import click

from eve.compiler import check_artifacts, compile_to_disk
from eve.compiler.diagnostics import format_diagnostic
from eve.errors import CompileFailed
from eve.execution.setup import AgentSetup
from eve.hooks.relay import HookRelay
from eve.models.registry import choose_model, create_client
from eve.runtime import load_compiled_agent, resolve_agent

DEFAULT_MAX_TURNS = 10


def ensure_compiled(app_root: Path) -> bool:
    """Compile when the artifacts are stale; True when it did. Raises ``CompileFailed``."""
    if check_artifacts(app_root).fresh:
        return False
    try:
        compile_to_disk(app_root)
    except CompileFailed as failure:
        for diagnostic in failure.diagnostics:
            if diagnostic.severity == "error":
                click.echo(format_diagnostic(diagnostic), err=True)
        raise
    return True


async def prepare(app_root: Path, *, model: str | None, max_turns: int | None) -> AgentSetup:
    """Compile if needed, resolve the root agent and pick its model client."""
    if ensure_compiled(app_root):
        click.echo("eve: agent/ changed since the last compile; recompiled .eve/", err=True)
    loaded = load_compiled_agent(app_root)
    agent = await resolve_agent(loaded.manifest, loaded.module_map, app_root=app_root)
    if model is not None:
        client = create_client(model, app_root=app_root, env=os.environ)
    else:
        choice = choose_model(agent.config.model, app_root=app_root)
        if choice.notice:
            click.echo(choice.notice, err=True)
        client = choice.client
    window = agent.config.model_context_window_tokens
    return AgentSetup(
        agent=agent,
        fingerprint=loaded.manifest.fingerprint,
        client=client,
        max_turns=max_turns or agent.config.limits.max_turns or DEFAULT_MAX_TURNS,
        workspace=(app_root / agent.config.workspace) if agent.config.workspace else app_root,
        context_budget_tokens=int(window * 0.8) if window else None,
        hooks=HookRelay.for_hooks(agent.hooks),
    )
