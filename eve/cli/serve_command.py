"""``eve serve``: the durable HTTP session API on uvicorn, one or many worker processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable
from pathlib import Path

import click

from eve.auth.settings import AUDIENCE_ENV, CLIENT_ID_ENV, ISSUER_ENV, oidc_settings
from eve.channels.serving import channel_declarations, channel_lines
from eve.cli.agent_setup import ensure_compiled, prepare
from eve.cli.errors import translate_errors
from eve.cli.main import app_root_of
from eve.manifest import MANIFEST_PATH, ROOT_NODE_ID
from eve.runtime import load_compiled_agent
from eve.runtime.load import read_manifest
from eve.sandbox.bindings import bound_roots
from eve.schedules.tick import delivery_retry_seconds
from eve.server import ServerOptions, create_app
from eve.server.app import service_for, start_service, stop_service
from eve.server.auth import TOKEN_ENV, require_token_for
from eve.server.collector import full_threshold, tune_collector
from eve.server.hosts import ALLOWED_HOSTS_ENV, allowed_hosts, listed_hosts
from eve.server.slices import slice_ms, slices_for_backend
from eve.server.switching import switch_interval_ms, tune_switching
from eve.server.workers import Listen, bind, serve_on, serving_loop, supervise
from eve.sessions.retention import configured_retention, prune_periodically
from eve.sessions.settings import MAX_QUEUED_ENV
from eve.sessions.settings import max_queued_turns as read_max_queued
from eve.sessions.workspace_disk import configured_idle, remove_periodically


def _worker_name(index: int) -> str:
    return f"{os.environ.get('EVE_WORKER_ID') or socket.gethostname()}-{index}"


async def _serve_worker(
    options: ServerOptions,
    sock: socket.socket,
    index: int,
    model: str | None,
    ready: Callable[[], None],
) -> None:
    os.environ["EVE_WORKER_ID"] = _worker_name(index)
    # a server never falls back to the offline model: nobody would read the notice, and
    # /health would say ready while every answer is fake (ServedModelUnavailable, exit 2)
    setup = await prepare(options.app_root, model=model, max_turns=None, offline_fallback=False)
    service = service_for(options, setup)
    channels = await channel_declarations(load_compiled_agent(options.app_root))
    app = create_app(options, service, channels=channels)
    await start_service(app)
    # started: what is alive now lives as long as the worker (``collector.py``)
    tune_collector(full_threshold(os.environ))
    tune_switching(switch_interval_ms(os.environ, postgres=service.settings.is_postgres))
    slices_for_backend(
        asyncio.get_running_loop(),
        postgres=service.settings.is_postgres,
        env=os.environ,
        claims_on_loop=service.pg_claims is not None,
    )
    retention = configured_retention(os.environ)
    # one worker prunes for all: they share the database
    pruning = None
    if retention is not None and index == 0:
        pruning = asyncio.create_task(prune_periodically(service.settings, older_than=retention))
    # each worker for its disk (workers on one machine take turns under a lock)
    removing = asyncio.create_task(
        remove_periodically(service.store, bound_roots, idle_after=configured_idle(os.environ))
    )
    try:
        host, port = sock.getsockname()[:2]
        click.echo(
            f"eve serve · worker {index} · http://{host}:{port}/eve/v1 · {setup.client.model_id}",
            err=True,
        )
        for line in channel_lines(channels, f"http://{host}:{port}"):
            click.echo(f"eve serve · {line}", err=True)
        await serve_on(app, sock, on_ready=ready)
    finally:
        for task in (pruning, removing):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await stop_service(app)


def _has_auth_hook(app_root: Path) -> bool:
    """The compiled agent has ``agent/auth.py``: it verifies users itself."""
    return read_manifest(app_root / MANIFEST_PATH).nodes[ROOT_NODE_ID].auth is not None


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes sharing the port and the session database.",
)
@click.option("--model", help="Model id to use instead of agent.py's (e.g. offline/test).")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Turns one worker runs at once.",
)
@click.option(
    "--max-queued-turns",
    metavar="N",
    help=(
        "Turns waiting in the queue past which a message is refused with 503 and "
        f"Retry-After (default: ${MAX_QUEUED_ENV}, else no limit)."
    ),
)
@click.option(
    "--allowed-host",
    "allowed_host",
    multiple=True,
    metavar="NAME",
    help=(
        "A Host name to answer besides loopback and --host "
        f"(repeatable; default: ${ALLOWED_HOSTS_ENV}, comma-separated)."
    ),
)
@click.option("--auth-issuer", metavar="URL", help=f"OIDC issuer of users' tokens (${ISSUER_ENV}).")
@click.option(
    "--auth-audience", metavar="AUD", help=f"Audience users' tokens must carry (${AUDIENCE_ENV})."
)
@click.option(
    "--auth-client-id",
    metavar="ID",
    help=f"Public client the dev UI signs in as (${CLIENT_ID_ENV}).",
)
@click.pass_context
@translate_errors
def serve_command(
    ctx: click.Context,
    host: str,
    port: int,
    workers: int,
    model: str | None,
    concurrency: int,
    max_queued_turns: str | None,
    allowed_host: tuple[str, ...],
    auth_issuer: str | None,
    auth_audience: str | None,
    auth_client_id: str | None,
) -> None:
    """Serve the agent's durable session API over HTTP."""
    app_root = app_root_of(ctx)
    token = os.environ.get(TOKEN_ENV) or None
    oidc = oidc_settings(
        issuer=auth_issuer, audience=auth_audience, client_id=auth_client_id, env=os.environ
    )
    # a bad EVE_RETENTION, EVE_WORKSPACE_IDLE, EVE_GC_FULL_THRESHOLD,
    # EVE_SWITCH_INTERVAL_MS, EVE_REQUEST_SLICE_MS or EVE_DELIVERY_RETRY_SECONDS stops it
    # here, not in a worker
    configured_retention(os.environ)
    configured_idle(os.environ)
    full_threshold(os.environ)
    switch_interval_ms(os.environ)
    slice_ms(os.environ)
    delivery_retry_seconds(os.environ)
    # a short token is refused before compiling; only a bind with neither a token nor an
    # issuer waits for the compile, which tells whether agent/auth.py verifies users
    if token is not None or oidc is not None:
        require_token_for(host, token, verifies_users=oidc is not None)
    listed = listed_hosts(allowed_host, os.environ)
    allowed = allowed_hosts(bind=host, listed=listed, token=token)
    if ensure_compiled(app_root):
        click.echo("eve: agent/ changed since the last compile; recompiled .eve/", err=True)
    if token is None and oidc is None:
        require_token_for(host, None, verifies_users=_has_auth_hook(app_root))
    options = ServerOptions(
        app_root=app_root,
        token=token,
        oidc=oidc,
        allowed_hosts=allowed,
        concurrency=concurrency,
        max_queued_turns=None if max_queued_turns is None else read_max_queued(max_queued_turns),
    )
    sock = bind(Listen(host=host, port=port))

    # in a forked worker too, an eve error is one `eve: …` line and the error's exit code
    @translate_errors
    def run_worker(index: int, ready: Callable[[], None]) -> None:
        with asyncio.Runner(loop_factory=serving_loop()) as runner:
            runner.run(_serve_worker(options, sock, index, model, ready))

    if workers == 1:
        run_worker(0, lambda: None)
        return
    raise SystemExit(supervise(workers, sock, run_worker))
