"""``eve serve``: the durable HTTP session API on uvicorn, one or many worker processes."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import click

from eve.cli.agent_setup import ensure_compiled, prepare
from eve.cli.errors import translate_errors
from eve.cli.main import app_root_of
from eve.errors import ServerConfigError
from eve.server import ServerOptions, create_app
from eve.server.auth import TOKEN_ENV, require_token_for
from eve.server.workers import Listen, bind, serve_on, supervise
from eve.sessions.settings import DATABASE_URL_ENV


def _worker_name(index: int) -> str:
    return f"{os.environ.get('EVE_WORKER_ID') or socket.gethostname()}-{index}"


async def _serve_worker(
    app_root: Path, sock: socket.socket, index: int, model: str | None, concurrency: int
) -> None:
    os.environ["EVE_WORKER_ID"] = _worker_name(index)
    setup = await prepare(app_root, model=model, max_turns=None)
    token = os.environ.get(TOKEN_ENV) or None
    options = ServerOptions(app_root=app_root, token=token, concurrency=concurrency)
    app = create_app(options, setup)
    host, port = sock.getsockname()[:2]
    click.echo(
        f"eve serve · worker {index} · http://{host}:{port}/eve/v1 · {setup.client.model_id}",
        err=True,
    )
    await serve_on(app, sock)


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes (more than one needs PostgreSQL).",
)
@click.option("--model", help="Model id to use instead of agent.py's (e.g. offline/test).")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Turns one worker runs at once.",
)
@click.pass_context
@translate_errors
def serve_command(
    ctx: click.Context, host: str, port: int, workers: int, model: str | None, concurrency: int
) -> None:
    """Serve the agent's durable session API over HTTP."""
    app_root = app_root_of(ctx)
    require_token_for(host, os.environ.get(TOKEN_ENV) or None)
    if workers > 1 and not os.environ.get(DATABASE_URL_ENV):
        raise ServerConfigError(
            f"--workers {workers} shares sessions between processes, which needs PostgreSQL: "
            f"set {DATABASE_URL_ENV}=postgresql://… (the embedded SQLite serves one worker)"
        )
    if ensure_compiled(app_root):
        click.echo("eve: agent/ changed since the last compile; recompiled .eve/", err=True)
    sock = bind(Listen(host=host, port=port))

    def run_worker(index: int) -> None:
        asyncio.run(_serve_worker(app_root, sock, index, model, concurrency))

    if workers == 1:
        run_worker(0)
        return
    raise SystemExit(supervise(workers, sock, run_worker))
