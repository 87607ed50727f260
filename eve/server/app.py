"""The eve session routes under ``/eve/v1``; the vocabulary and status codes are eve's."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from eve._attachments import MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS_BYTES, AttachmentLimits
from eve.auth.settings import OIDCSettings
from eve.channels.declaration import ChannelDeclaration, channel_routes
from eve.channels.mount import StartHook
from eve.connections.authorization import CALLBACK_PATH
from eve.errors import (
    EveError,
    InvalidBody,
    InvalidStartIndex,
    SessionNotActive,
    SessionNotFound,
)
from eve.execution.setup import AgentSetup
from eve.runtime.info import agent_info
from eve.server.answers import answer, error_response, refusal
from eve.server.auth import AUTH_CONFIG_PATH, ServerAuth, principal_of
from eve.server.auth_config import auth_config_route, server_auth, token_endpoint_origin
from eve.server.auth_middleware import PrincipalAuth
from eve.server.bodies import MAX_BODY_BYTES, follow_up, message_of, read_body
from eve.server.followers import FollowedStream, Followers
from eve.server.guard import RequestGuard
from eve.server.hosts import LOOPBACK, AllowedHosts
from eve.server.memory_routes import memory_routes
from eve.server.oauth_callback import oauth_callback
from eve.server.schedule_routes import ScheduleRoutes
from eve.server.server_timing import ServerTiming
from eve.server.session_list import session_list
from eve.server.staleness import SourceWatch
from eve.server.web_ui import ui_routes
from eve.sessions import Accepted, SessionService, resolve_settings
from eve.sessions.database_errors import fail_fast, first_line, scrub, unavailable
from eve.sessions.idempotency import HEADER as IDEMPOTENCY_HEADER
from eve.sessions.idempotency import parse_key
from eve.wire.answers import Accepted as WireAccepted
from eve.wire.answers import Health, TaskEventDelivered
from eve.wire.requests import CreateBody, FollowUpBody, TaskEventBody

PREFIX = "/eve/v1"
#: the largest ``startIndex``: a signed 64-bit integer, the most either database can compare
MAX_START_INDEX = 2**63 - 1

log = logging.getLogger("eve.server")


@dataclass(frozen=True, kw_only=True)
class ServerOptions:
    app_root: Path
    #: the shared bearer token, whose holder is the operator; None on loopback without one
    token: str | None
    #: the OIDC issuer whose bearer JWTs prove users (``docs/auth.md``), if any
    oidc: OIDCSettings | None = None
    #: how the issuer is reached instead of the network (a provider served in process)
    oidc_transport: httpx.AsyncBaseTransport | None = None
    #: the ``Host`` headers answered (``hosts.allowed_hosts``): loopback names unless given
    allowed_hosts: AllowedHosts = LOOPBACK
    concurrency: int = 100
    #: characters of a message's text
    max_message_chars: int = 100_000
    #: bytes of a request body (JSON, attachments in base64)
    max_body_bytes: int = MAX_BODY_BYTES
    #: bytes of one attachment's content (decoded)
    max_attachment_bytes: int = MAX_ATTACHMENT_BYTES
    #: bytes of all of one message's attachments together (decoded)
    max_attachments_bytes: int = MAX_ATTACHMENTS_BYTES
    #: the session database's URL instead of the environment's (never shown in errors)
    database_url: str | None = None
    #: how often the server looks for edited agent sources it does not serve (``staleness``)
    watch_seconds: float = 2.0
    #: turns waiting in the queue past which a message is refused with 503 (``QueueFull``);
    #: None: ``EVE_MAX_QUEUED_TURNS``, else no limit
    max_queued_turns: int | None = None


def _accepted(accepted: Accepted, status: int = 202) -> Response:
    headers = {"x-eve-session-id": accepted.session_id}
    if accepted.replayed:
        headers["idempotent-replayed"] = "true"
    return answer(accepted.wire(), status=status, **headers)


Handler = Callable[[Request], Awaitable[Response]]


def _guarded(handler: Handler) -> Handler:
    """Every failure becomes ``{ok: false, code, error}`` with the error's status."""

    async def run(request: Request) -> Response:
        try:
            with fail_fast():
                return await handler(request)
        except EveError as error:
            return refusal(error)
        except ClientDisconnect:
            raise  # nobody is left to answer
        except Exception as error:
            return _unexpected(f"{request.method} {handler.__name__}", error)

    return run


def _unexpected(where: str, error: Exception) -> Response:
    """A database failure is a 503 the client may retry; anything else a logged 500."""
    lost = unavailable(error)
    if lost is not None:
        log.warning("%s: %s: %s", where, lost, scrub(first_line(error)))
        return refusal(lost)
    log.error("%s: internal error\n%s", where, scrub("".join(traceback.format_exception(error))))
    return error_response(500, "internal_error", "internal error; see the server log")


class _Routes:
    def __init__(
        self,
        options: ServerOptions,
        service: SessionService,
        followers: Followers,
        watch: SourceWatch,
    ) -> None:
        self.options = options
        self.service = service
        self.followers = followers
        self.watch = watch

    async def health(self, request: Request) -> Response:
        return answer(Health())

    async def info(self, request: Request) -> Response:
        # what runs the turns, not only what agent.py names: --model replaces it
        info = agent_info(self.options.app_root)
        info.served_model = self.service.setup.client.model_id
        info.served_stale_sources = await asyncio.to_thread(self.watch.changed)
        return answer(info)

    async def create(self, request: Request) -> Response:
        key = _idempotency_key(request)
        body = await read_body(request, CreateBody, self.options.max_body_bytes)
        message = None if body.message is None else message_of(body.message)
        principal = principal_of(request)
        return _accepted(await self.service.create(message, key=key, principal=principal))

    async def summary(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        return answer(await self.service.summary(session_id, principal=principal_of(request)))

    async def follow_up(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        key = _idempotency_key(request)
        body = follow_up(await read_body(request, FollowUpBody, self.options.max_body_bytes))
        principal = principal_of(request)
        if body.message is not None:
            message = message_of(body.message)
            sent = await self.service.send(session_id, message, key=key, principal=principal)
            return _accepted(sent)
        responses = body.input_responses or []
        answered = await self.service.respond(session_id, responses, key=key, principal=principal)
        return _accepted(answered)

    async def cancel(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        try:
            cancelled = await self.service.cancel(session_id, principal=principal_of(request))
        except SessionNotFound as missing:
            raise _not_active(session_id) from missing
        if not cancelled:
            return answer(WireAccepted(session_id=session_id, status="no_active_turn"))
        return answer(WireAccepted(session_id=session_id, status="cancelling"), status=202)

    async def reset(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        await self.service.reset(session_id, principal=principal_of(request))
        return answer(WireAccepted(session_id=session_id, status="reset"))

    async def fork(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        key = _idempotency_key(request)
        forked = await self.service.fork(session_id, key=key, principal=principal_of(request))
        return _accepted(forked, status=201)

    async def compact(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        await self.service.compact(session_id, principal=principal_of(request))
        return answer(WireAccepted(session_id=session_id, status="compacting"))

    async def task_event(self, request: Request) -> Response:
        session_id, task_id = request.path_params["session_id"], request.path_params["task_id"]
        body = await read_body(request, TaskEventBody, self.options.max_body_bytes)
        if not body.name:
            raise InvalidBody("`name` is empty")
        await self.service.send_event(
            session_id, task_id, body.name, body.data, principal=principal_of(request)
        )
        return answer(TaskEventDelivered(session_id=session_id, task_id=task_id), status=202)

    async def stream(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        start = _start_index(request.query_params.get("startIndex", "0"))
        if start is None:
            raise InvalidStartIndex(
                f"startIndex must be an integer from 0 to {MAX_START_INDEX}, in ASCII digits"
            )
        follow = request.query_params.get("follow", "true").lower() not in ("false", "0", "no")
        # a read does not wait out a database fault (db_retry): the stream ends whole, and
        # its client follows it again from its next index
        batches = await self.service.event_batches(
            session_id, start, follow=follow, principal=principal_of(request)
        )

        async def lines() -> AsyncIterator[bytes]:
            try:
                # the events ready together as one chunk: one socket write for a commit
                async for batch in batches:
                    yield ("\n".join(batch) + "\n").encode()
            except Exception as error:
                lost = unavailable(error)
                if lost is None:
                    raise
                # ended whole, the stream's client reconnects from the next index it needs
                # (503 until the database answers); one line here, not a traceback from
                # uvicorn for every follower
                log.warning("GET stream: ended; %s: %s", lost, scrub(first_line(error)))

        if follow:
            return FollowedStream(lines(), followers=self.followers)
        return StreamingResponse(lines(), media_type="application/x-ndjson")


def _start_index(raw: str) -> int | None:
    """``raw`` as an index, or None. ASCII digits only: ``str.isdigit`` also takes "²" and
    "٣", which ``int`` refuses or reads as another number."""
    if not (raw.isascii() and raw.isdigit()):
        return None
    digits = raw.lstrip("0") or "0"
    if len(digits) > len(str(MAX_START_INDEX)):  # before int(), which refuses 4,300 digits
        return None
    start = int(digits)
    return start if start <= MAX_START_INDEX else None


def _idempotency_key(request: Request) -> str | None:
    return parse_key(request.headers.get(IDEMPOTENCY_HEADER))


def _not_active(session_id: str) -> EveError:
    return SessionNotActive(f"no active session {session_id}", session_id=session_id)


def service_for(options: ServerOptions, setup: AgentSetup) -> SessionService:
    """The durable service ``eve serve`` runs for ``setup``: its database is
    ``options.database_url``, else the environment's (agent.py's ``database_url_env``, else
    ``EVE_DATABASE_URL``), else the embedded SQLite under ``.eve/sessions``."""
    url_env = setup.agent.config.database_url_env
    env: Mapping[str, str] = os.environ
    if options.database_url is not None:
        # read as if from a variable named after the option, so an error names the option
        url_env = "database_url"
        env = {**os.environ, url_env: options.database_url}
    settings = resolve_settings(options.app_root, env=env, url_env=url_env)
    return SessionService(
        setup,
        settings,
        concurrency=options.concurrency,
        max_message_chars=options.max_message_chars,
        attachment_limits=AttachmentLimits(
            each=options.max_attachment_bytes, total=options.max_attachments_bytes
        ),
        max_queued_turns=options.max_queued_turns,
    )


def create_app(
    options: ServerOptions,
    service: SessionService,
    *,
    channels: Sequence[ChannelDeclaration] = (),
) -> Starlette:
    """The session API over ``service``, which starts with the app's lifespan and stops
    with it (or earlier, through ``start_service``).

    The service is an argument so that a test can drive the real app in its own process
    (Starlette's ``TestClient`` runs the lifespan); ``service_for`` builds the one
    ``eve serve`` uses.
    """
    followers = Followers()
    watch = SourceWatch(options.app_root)
    routes = _Routes(options, service, followers, watch)
    auth = server_auth(
        token=options.token,
        oidc=options.oidc,
        hook=service.setup.agent.auth,
        transport=options.oidc_transport,
    )
    #: what the channels' kinds run once the service has started (``ChannelMount.on_start``)
    on_start: list[StartHook] = []
    schedules = ScheduleRoutes(options.app_root, service)
    # the agent's schedules fire once the service (DBOS) runs
    on_start.append(schedules.start)
    running = _Running(service, watch, options.watch_seconds, auth, on_start, schedules)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await running.start()
        try:
            yield
        finally:
            await running.stop()

    session = PREFIX + "/session/{session_id}"
    memory_list, memory_forget, memory_erase = memory_routes(service.setup)
    app = Starlette(
        routes=[
            Route(PREFIX + "/health", _guarded(routes.health), methods=["GET"]),
            Route(PREFIX + "/info", _guarded(routes.info), methods=["GET"]),
            Route(AUTH_CONFIG_PATH, _guarded(auth_config_route(auth)), methods=["GET"]),
            Route(PREFIX + "/session", _guarded(routes.create), methods=["POST"]),
            Route(PREFIX + "/sessions", _guarded(session_list(service)), methods=["GET"]),
            Route(PREFIX + "/memory", _guarded(memory_list), methods=["GET"]),
            Route(PREFIX + "/memory", _guarded(memory_erase), methods=["DELETE"]),
            Route(PREFIX + "/memory/{memory_id}", _guarded(memory_forget), methods=["DELETE"]),
            Route(session, _guarded(routes.follow_up), methods=["POST"]),
            Route(session, _guarded(routes.summary), methods=["GET"]),
            Route(session + "/cancel", _guarded(routes.cancel), methods=["POST"]),
            Route(session + "/reset", _guarded(routes.reset), methods=["POST"]),
            Route(session + "/fork", _guarded(routes.fork), methods=["POST"]),
            Route(session + "/compact", _guarded(routes.compact), methods=["POST"]),
            Route(session + "/stream", _guarded(routes.stream), methods=["GET"]),
            Route(
                session + "/tasks/{task_id}/events",
                _guarded(routes.task_event),
                methods=["POST"],
            ),
            *schedules.routes(PREFIX, _guarded),
            Route(CALLBACK_PATH, _guarded(oauth_callback), methods=["GET"]),
            *ui_routes(connect=lambda: token_endpoint_origin(auth)),
            *[
                route
                for channel in channels
                for route in channel_routes(channel, service, auth.authenticate, on_start)
            ],
        ],
        # the guard first: a rebound or cross-origin page is refused whatever it sends
        # (after the timing, which times a POST's whole answer: ``server_timing.py``)
        middleware=[
            Middleware(ServerTiming),
            Middleware(
                RequestGuard,
                allowed=options.allowed_hosts,
                channel_paths=[c.path.rstrip("/") for c in channels],
            ),
            Middleware(PrincipalAuth, auth=auth, channel_paths=[c.path for c in channels]),
        ],
        lifespan=lifespan,
    )
    app.state.service = service
    app.state.running = running
    app.state.followers = followers
    return app


async def start_service(app: Starlette) -> None:
    """Start the session service of an app ``create_app`` made, ahead of its lifespan.

    ``eve serve`` does, so that a database it cannot open is one ``DatabaseUnavailable``
    it prints, not a lifespan traceback from uvicorn; the lifespan then only stops it.
    """
    running: _Running = app.state.running
    await running.start()


async def stop_service(app: Starlette) -> None:
    """Stop the service if it runs (the lifespan may have stopped it already)."""
    running: _Running = app.state.running
    await running.stop()


class _Running:
    """Starts the service once, whoever asks first, and stops it once; meanwhile watches
    the agent's sources for edits it does not serve."""

    def __init__(
        self,
        service: SessionService,
        watch: SourceWatch,
        every: float,
        auth: ServerAuth,
        on_start: list[StartHook],
        schedules: ScheduleRoutes,
    ) -> None:
        self.service = service
        self.schedules = schedules
        self.on_start = on_start
        self.auth = auth
        self.started = False
        self.watch = watch
        self.every = every
        self._watching: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if not self.started:
            # the issuer first: unreachable, it stops the start before a database is opened
            await self.auth.start()
            await self.service.start()
            self.started = True
            for hook in self.on_start:
                await hook()
            self._watching = asyncio.create_task(self.watch.watch(self.every))

    async def stop(self) -> None:
        if self.started:
            self.started = False
            if self._watching is not None:
                self._watching.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._watching
            # after the service: a tick DBOS runs until it stops still finds its runtime
            await self.service.stop()
            self.schedules.stop()
