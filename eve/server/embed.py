"""eve's session API as an ASGI app to mount in another one (Starlette, FastAPI).

Starlette and FastAPI never run a mounted app's lifespan, and eve's holds everything a
request needs (the durable engine, the session store, the turn runtime). So ``EveApp``
builds all of it in ``EveApp.lifespan``, which the host enters in its own, and until then
answers every request with ``EveAppNotStarted`` instead of failing somewhere deep inside.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import HTTPConnection
from starlette.routing import Router
from starlette.types import Receive, Scope, Send

from eve._agent_setup import build_setup
from eve._attachments import MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS_BYTES
from eve.artifacts import check_artifacts
from eve.auth.settings import oidc_settings
from eve.channels.serving import channel_declarations
from eve.errors import EveAppAlreadyRunning, EveAppNotStarted, StaleArtifacts
from eve.runtime import CompiledAgent, load_compiled_agent
from eve.server.answers import refusal
from eve.server.app import (
    ServerOptions,
    create_app,
    service_for,
    start_service,
    stop_service,
)
from eve.server.auth import TOKEN_ENV
from eve.server.bodies import MAX_BODY_BYTES
from eve.server.hosts import allowed_hosts as hosts_for
from eve.server.hosts import listed_hosts
from eve.sessions.service import MAX_MESSAGE_CHARS

log = logging.getLogger("eve.server")

#: the eve app whose lifespan runs in this process: DBOS, under the durable engine, is a
#: process-wide singleton, so a second app would take over the first one's engine
_running: EveApp | None = None


class EveApp:
    """eve's HTTP session API for one agent, as an ASGI app to mount (``eve_app`` builds it).

    Its routes are those of ``eve serve`` (``/eve/v1/...``) below the mount point. Enter
    ``lifespan`` in the host's lifespan, or pass it as the host's: the durable service starts
    there and stops when the host stops.
    """

    def __init__(self, compiled: CompiledAgent, *, options: ServerOptions, model: str | None):
        self.compiled = compiled
        self.options = options
        self.model = model
        #: the session API, from the lifespan's start to its end
        self._app: Starlette | None = None
        # served by an ASGI server directly (not mounted), the app runs its own lifespan
        self._lifespan_router = Router(lifespan=self.lifespan)

    @property
    def app_root(self) -> Path:
        return self.compiled.app_root

    @property
    def started(self) -> bool:
        return self._app is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan_router.lifespan(scope, receive, send)
            return
        app = self._app
        if app is None:
            await self._refuse(scope, receive, send)
            return
        await app(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(self, host: object = None) -> AsyncIterator[None]:
        """Run the agent's durable service (its database, DBOS, the turn workers) for as
        long as the context lasts. ``host`` is ignored: it is there so that the method can
        be a Starlette or FastAPI app's ``lifespan=`` as it is.

        Raises ``EveAppAlreadyRunning`` when another eve app runs in this process, and what
        ``eve serve`` raises at startup (``DatabaseUnavailable``, ``ServedModelUnavailable``
        for a model without credentials, ...).
        """
        _claim_process(self)
        try:
            setup = await build_setup(
                self.compiled,
                model=self.model,
                max_turns=None,
                notify=log.warning,
                offline_fallback=False,
            )
            channels = await channel_declarations(self.compiled)
            app = create_app(self.options, service_for(self.options, setup), channels=channels)
            await start_service(app)
            self._app = app
            try:
                yield
            finally:
                self._app = None
                await stop_service(app)
        finally:
            _release_process(self)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = HTTPConnection(scope).url.path
        refused = EveAppNotStarted(
            f"the eve app of {self.app_root} got {path} before its lifespan ran: a host app "
            "does not run a mounted app's lifespan, so enter it in the host's "
            "(`Starlette(..., lifespan=agent.lifespan)`, or `async with agent.lifespan():` "
            "inside the host's own lifespan)",
            path=path,
        )
        log.error("%s", refused)
        if scope["type"] != "http":  # a websocket has no status to answer with
            raise refused
        response = refusal(refused)
        await response(scope, receive, send)


def _claim_process(app: EveApp) -> None:
    global _running
    if _running is app:
        raise EveAppAlreadyRunning(
            f"the lifespan of the eve app of {app.app_root} already runs: enter it once "
            "(as the host's lifespan, or inside it, not both)",
            app_root=str(app.app_root),
            running_app_root=str(app.app_root),
        )
    if _running is not None:
        raise EveAppAlreadyRunning(
            f"another eve app ({_running.app_root}) runs in this process, and the durable "
            f"engine is one per process: serve the agent of {app.app_root} from another "
            "process (its own `eve serve` or host app)",
            app_root=str(app.app_root),
            running_app_root=str(_running.app_root),
        )
    _running = app


def _release_process(app: EveApp) -> None:
    global _running
    if _running is app:
        _running = None


def eve_app(
    agent: Path | str | CompiledAgent,
    *,
    token: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    model: str | None = None,
    database_url: str | None = None,
    concurrency: int = 100,
    max_message_chars: int = MAX_MESSAGE_CHARS,
    max_body_bytes: int = MAX_BODY_BYTES,
    max_attachment_bytes: int = MAX_ATTACHMENT_BYTES,
    max_attachments_bytes: int = MAX_ATTACHMENTS_BYTES,
    auth_issuer: str | None = None,
    auth_audience: str | None = None,
    auth_client_id: str | None = None,
) -> EveApp:
    """eve's HTTP session API for an agent, to mount in a Starlette or FastAPI app.

    Args:
        agent: an app root (the folder holding ``agent/`` and its compiled ``.eve/``), or
            a ``CompiledAgent`` from ``eve.runtime.load_compiled_agent``.
        token: the bearer token every route but health requires; ``EVE_API_TOKEN`` when
            not given, and no token when neither is set.
        allowed_hosts: the host names (and addresses) the app answers to beside
            ``127.0.0.1``, ``localhost`` and ``[::1]``, as the browser sends them in
            ``Host``; ``EVE_ALLOWED_HOSTS`` (comma-separated) when not given. Mounted, eve
            does not know the address the host app listens on, so any other name is
            refused until it is listed; ``["*"]`` answers every name and needs a token of
            32 characters or more.
        model: the model every node uses instead of its configured one (``eve serve
            --model``).
        database_url: a ``postgresql://`` URL for the sessions, instead of the
            environment's; without either they are stored in SQLite under ``.eve/sessions``.
        concurrency: steps computed at once (``eve serve --concurrency``).
        max_message_chars: characters of a message's text.
        max_body_bytes: bytes of a request body.
        max_attachment_bytes: bytes of one image or document (decoded).
        max_attachments_bytes: bytes of one message's images and documents together.
        auth_issuer: the OIDC issuer whose bearer JWTs prove users (``EVE_AUTH_ISSUER``
            when not given); see docs/auth.md.
        auth_audience: the audience those tokens must carry (``EVE_AUTH_AUDIENCE``).
        auth_client_id: the public client the dev UI signs in as (``EVE_AUTH_CLIENT_ID``).

    Raises ``AuthConfigInvalid`` for an issuer without an audience (or the reverse) or an
    issuer that is not https, ``ServerConfigError`` for an allowed host that is not a host
    name or an address, or ``"*"`` without a strong token; ``ArtifactsMissing`` when the
    app root was never compiled and ``StaleArtifacts`` when ``agent/`` changed since (a
    server runs the artifacts it is given: run ``eve compile``). Nothing authored is
    imported until the lifespan starts.
    """
    compiled = agent if isinstance(agent, CompiledAgent) else _fresh_artifacts(Path(agent))
    token = token if token is not None else os.environ.get(TOKEN_ENV) or None
    options = ServerOptions(
        app_root=compiled.app_root,
        token=token,
        allowed_hosts=hosts_for(bind=None, listed=_listed(allowed_hosts), token=token),
        concurrency=concurrency,
        max_message_chars=max_message_chars,
        max_body_bytes=max_body_bytes,
        max_attachment_bytes=max_attachment_bytes,
        max_attachments_bytes=max_attachments_bytes,
        database_url=database_url,
        oidc=oidc_settings(
            issuer=auth_issuer, audience=auth_audience, client_id=auth_client_id, env=os.environ
        ),
    )
    return EveApp(compiled, options=options, model=model)


def _listed(allowed_hosts: Sequence[str] | None) -> tuple[str, ...]:
    if allowed_hosts is None:
        return listed_hosts((), os.environ)
    # one name given as a string is one entry, not a sequence of letters
    entries = [allowed_hosts] if isinstance(allowed_hosts, str) else list(allowed_hosts)
    return listed_hosts(entries, {})


def _fresh_artifacts(app_root: Path) -> CompiledAgent:
    compiled = load_compiled_agent(app_root)  # ArtifactsMissing before any freshness talk
    report = check_artifacts(app_root)
    if not report.fresh:
        differ = [
            *report.changed,
            *report.added,
            *report.removed,
            *report.plugins,
            *report.problems,
        ]
        shown = ", ".join(differ[:3]) + (", ..." if len(differ) > 3 else "")
        raise StaleArtifacts(
            f"the artifacts in {app_root / '.eve'} do not match the sources ({shown}): "
            f"run `eve compile` in {app_root} before starting the app",
            path=str(app_root / ".eve"),
        )
    return compiled
