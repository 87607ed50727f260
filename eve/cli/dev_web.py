"""``eve dev --web``: the session API and the dev UI on loopback, opened in a browser.

Loopback is not trust: any page the person's browser opens can send requests to
``127.0.0.1``. So, as Jupyter does, each run makes a random token (unless
``EVE_API_TOKEN`` is set) and opens the UI with it in the URL's fragment, which a browser
never sends to a server: the page keeps it and every API call carries it, and a page
without it gets ``401`` from every route but health.
"""

from __future__ import annotations

import os
import secrets
import webbrowser
from collections.abc import Sequence
from pathlib import Path

import click

from eve.channels.serving import channel_declarations, channel_lines
from eve.cli.agent_setup import prepare
from eve.runtime import load_compiled_agent
from eve.server import ServerOptions, create_app
from eve.server.app import start_service, stop_service
from eve.server.auth import TOKEN_ENV
from eve.server.hosts import allowed_hosts, listed_hosts
from eve.server.workers import Listen, bind, serve_on
from eve.sessions import SessionService, resolve_settings

#: loopback only: ``eve serve --host`` is the way to publish the API
HOST = "127.0.0.1"
#: the fragment that hands the page its token (read and removed by ``ui/api.js``)
TOKEN_FRAGMENT = "#token="


def _open(url: str) -> None:
    """Open ``url`` in the person's browser; none (a server, CI) is no failure."""
    try:
        webbrowser.open(url)
    except Exception:  # webbrowser raises what its browser's launcher raises
        click.echo(f"eve: could not open a browser; visit {url}", err=True)


def run_token() -> tuple[str, bool]:
    """The token this run requires, and whether it was made for it (not ``EVE_API_TOKEN``).

    A made token is put in ``EVE_API_TOKEN`` for this process, so that ``redact`` keeps it
    out of every error, log line and stored event, as it does a token given there.
    """
    given = os.environ.get(TOKEN_ENV)
    if given:
        return given, False
    made = secrets.token_urlsafe(32)
    os.environ[TOKEN_ENV] = made
    return made, True


async def serve_web(
    app_root: Path,
    *,
    model: str | None,
    port: int,
    open_browser: bool,
    worker: str,
    allowed_host: Sequence[str] = (),
) -> None:
    """Serve until interrupted; print the URL once the socket accepts, then open it."""
    setup = await prepare(app_root, model=model, max_turns=None)
    token, made = run_token()
    listed = listed_hosts(allowed_host, os.environ)
    options = ServerOptions(
        app_root=app_root,
        token=token,
        allowed_hosts=allowed_hosts(bind=HOST, listed=listed, token=token),
    )
    settings = resolve_settings(
        app_root, url_env=setup.agent.config.database_url_env, executor_id=worker
    )
    # the agent's channels, as `eve serve` mounts them: a channel is tried where it is written
    channels = await channel_declarations(load_compiled_agent(app_root))
    app = create_app(options, SessionService(setup, settings), channels=channels)
    sock = bind(Listen(host=HOST, port=port))
    page = f"http://{HOST}:{sock.getsockname()[1]}/"
    # a token of the person's own (EVE_API_TOKEN) is theirs to type: it is not printed
    url = page + TOKEN_FRAGMENT + token if made else page

    def ready() -> None:
        click.echo(f"eve dev · {setup.client.model_id} · {url} · Ctrl-C stops it", err=True)
        for line in channel_lines(channels, page):
            click.echo(f"eve dev · {line}", err=True)
        if open_browser:
            _open(url)

    await start_service(app)
    try:
        await serve_on(app, sock, on_ready=ready)
    finally:
        await stop_service(app)
