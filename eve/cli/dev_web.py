"""``eve dev --web``: the session API and the dev UI on loopback, opened in a browser."""

from __future__ import annotations

import os
import webbrowser
from pathlib import Path

import click

from eve.cli.agent_setup import prepare
from eve.server import ServerOptions, create_app
from eve.server.app import start_service, stop_service
from eve.server.auth import TOKEN_ENV
from eve.server.workers import Listen, bind, serve_on
from eve.sessions import SessionService, resolve_settings

#: loopback only: ``eve serve --host`` is the way to publish the API
HOST = "127.0.0.1"


def _open(url: str) -> None:
    """Open ``url`` in the person's browser; none (a server, CI) is no failure."""
    try:
        webbrowser.open(url)
    except Exception:  # webbrowser raises what its browser's launcher raises
        click.echo(f"eve: could not open a browser; visit {url}", err=True)


async def serve_web(
    app_root: Path, *, model: str | None, port: int, open_browser: bool, worker: str
) -> None:
    """Serve until interrupted; print the URL once the socket accepts, then open it."""
    setup = await prepare(app_root, model=model, max_turns=None)
    options = ServerOptions(app_root=app_root, token=os.environ.get(TOKEN_ENV) or None)
    settings = resolve_settings(
        app_root, url_env=setup.agent.config.database_url_env, executor_id=worker
    )
    app = create_app(options, SessionService(setup, settings))
    sock = bind(Listen(host=HOST, port=port))
    url = f"http://{HOST}:{sock.getsockname()[1]}/"

    def ready() -> None:
        click.echo(f"eve dev · {setup.client.model_id} · {url} · Ctrl-C stops it", err=True)
        if open_browser:
            _open(url)

    await start_service(app)
    try:
        await serve_on(app, sock, on_ready=ready)
    finally:
        await stop_service(app)
