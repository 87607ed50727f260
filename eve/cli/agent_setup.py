"""What ``eve run`` and ``eve dev`` share: fresh artifacts, the resolved agent, the model.

On fresh artifacts nothing here loads the compiler: the check is ``eve.artifacts`` and the
compiler is imported only to recompile stale ones.
"""

from __future__ import annotations

from pathlib import Path

import click

from eve._agent_setup import build_setup
from eve.artifacts import check_artifacts
from eve.errors import CompileFailed
from eve.execution.setup import AgentSetup
from eve.runtime import load_compiled_agent
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


async def prepare(
    app_root: Path,
    *,
    model: str | None,
    max_turns: int | None,
    announce: bool = True,
    offline_fallback: bool = True,
) -> AgentSetup:
    """Compile if needed, resolve the root agent and its subagents and pick their models.

    ``model`` replaces every node's configured model; a subagent without one uses its
    caller's. ``announce=False`` keeps quiet about a configured model that is unavailable
    (``eve eval``, whose cases usually pin models of their own). ``offline_fallback=False``
    (``eve serve``) refuses a model without credentials (``ServedModelUnavailable``). Sets
    up a tracer provider first when ``OTEL_*`` asks for one (``eve.tracing.provider``).
    """
    install_from_environment()
    if ensure_compiled(app_root):
        click.echo("eve: agent/ changed since the last compile; recompiled .eve/", err=True)
    setup = await build_setup(
        load_compiled_agent(app_root),
        model=model,
        max_turns=max_turns,
        notify=_to_stderr if announce else _quiet,
        offline_fallback=offline_fallback,
    )
    return _with_memory(app_root, setup)


def _with_memory(app_root: Path, setup: AgentSetup) -> AgentSetup:
    """Memory slots bound to the database ``eve serve`` would use, for turns in process
    (``eve run``, ``eve eval``; a session service binds its own, durable, over this)."""
    nodes = [setup, *setup.subagents.values()]
    if not any(node.agent.memory for node in nodes):
        return setup  # and no session database is opened or created
    from eve.cli.sessions_command import settings_for
    from eve.execution.memory import with_memory
    from eve.memory.access import MemoryHost

    url = settings_for(app_root, None).eve_url
    return with_memory(setup, MemoryHost(app_root=app_root, database_url=url))


def _to_stderr(notice: str) -> None:
    click.echo(notice, err=True)


def _quiet(notice: str) -> None:
    del notice
