"""The eve session routes under ``/eve/v1``; the vocabulary and status codes are eve's."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from eve.errors import EveError, SessionNotActive, SessionNotFound
from eve.execution.setup import AgentSetup
from eve.redact import redact
from eve.runtime.info import agent_info
from eve.server.auth import authorized
from eve.server.bodies import BodyError, CreateBody, FollowUpBody, follow_up, read_body
from eve.sessions import SessionService, resolve_settings

PREFIX = "/eve/v1"


@dataclass(frozen=True, kw_only=True)
class ServerOptions:
    app_root: Path
    #: bearer token every route but health requires; None on loopback without one
    token: str | None
    concurrency: int = 100
    max_message_chars: int = 100_000
    max_body_bytes: int = 1_000_000


def _error(status: int, code: str, message: str, **headers: str) -> JSONResponse:
    body = {"ok": False, "code": code, "error": redact(message)}
    return JSONResponse(body, status_code=status, headers=headers or None)


def _accepted(session_id: str, turn_id: str | None, status: str = "accepted") -> JSONResponse:
    body: dict[str, Any] = {"ok": True, "sessionId": session_id, "status": status}
    if turn_id is not None:
        body["turnId"] = turn_id
    return JSONResponse(body, status_code=202, headers={"x-eve-session-id": session_id})


Handler = Callable[[Request], Awaitable[Response]]


def _guarded(handler: Handler) -> Handler:
    """Every failure becomes ``{ok: false, code, error}`` with the error's status."""

    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except BodyError as error:
            return _error(error.status, error.code, error.message)
        except EveError as error:
            return _error(error.http_status, error.code, str(error))

    return run


class _Routes:
    def __init__(self, options: ServerOptions, service: SessionService) -> None:
        self.options = options
        self.service = service

    async def health(self, request: Request) -> Response:
        return JSONResponse({"ok": True, "status": "ready"})

    async def info(self, request: Request) -> Response:
        info = agent_info(self.options.app_root)
        return Response(msgspec.json.encode(info), media_type="application/json")

    async def create(self, request: Request) -> Response:
        body = await read_body(request, CreateBody, self.options.max_body_bytes)
        accepted = await self.service.create(body.message)
        return _accepted(accepted.session_id, accepted.turn_id)

    async def follow_up(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        body = follow_up(await read_body(request, FollowUpBody, self.options.max_body_bytes))
        if body.message is not None:
            accepted = await self.service.send(session_id, body.message)
            return _accepted(session_id, accepted.turn_id)
        await self.service.respond(session_id, body.input_responses or [])
        return _accepted(session_id, None, status="resolved")

    async def cancel(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        try:
            cancelled = await self.service.cancel(session_id)
        except SessionNotFound as missing:
            raise _not_active(session_id) from missing
        if not cancelled:
            return JSONResponse({"ok": True, "sessionId": session_id, "status": "no_active_turn"})
        return JSONResponse(
            {"ok": True, "sessionId": session_id, "status": "cancelling"}, status_code=202
        )

    async def reset(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        await self.service.reset(session_id)
        return JSONResponse({"ok": True, "sessionId": session_id, "status": "reset"})

    async def stream(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        raw_start = request.query_params.get("startIndex", "0")
        if not raw_start.isdigit():
            return _error(400, "invalid_start_index", "startIndex must be an integer ≥ 0")
        follow = request.query_params.get("follow", "true").lower() not in ("false", "0", "no")
        events = await self.service.events(session_id, int(raw_start), follow=follow)

        async def lines() -> AsyncIterator[bytes]:
            async for payload in events:
                yield (payload + "\n").encode() if payload else b"\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")


def _not_active(session_id: str) -> EveError:
    return SessionNotActive(f"no active session {session_id}", session_id=session_id)


class BearerAuth:
    """ASGI middleware: 401 unless the request carries the token (health is public)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not authorized(Request(scope), self.token):
            response = _error(
                401,
                "unauthorized",
                "missing or wrong bearer token",
                **{"www-authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(options: ServerOptions, setup: AgentSetup) -> Starlette:
    """The session API over a durable ``SessionService`` that starts with the app."""
    settings = resolve_settings(
        options.app_root,
        fingerprint=setup.fingerprint,
        url_env=setup.agent.config.database_url_env,
    )
    service = SessionService(
        setup,
        settings,
        concurrency=options.concurrency,
        max_message_chars=options.max_message_chars,
    )
    routes = _Routes(options, service)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await service.start()
        try:
            yield
        finally:
            await service.stop()

    session = PREFIX + "/session/{session_id}"
    app = Starlette(
        routes=[
            Route(PREFIX + "/health", _guarded(routes.health), methods=["GET"]),
            Route(PREFIX + "/info", _guarded(routes.info), methods=["GET"]),
            Route(PREFIX + "/session", _guarded(routes.create), methods=["POST"]),
            Route(session, _guarded(routes.follow_up), methods=["POST"]),
            Route(session + "/cancel", _guarded(routes.cancel), methods=["POST"]),
            Route(session + "/reset", _guarded(routes.reset), methods=["POST"]),
            Route(session + "/stream", _guarded(routes.stream), methods=["GET"]),
        ],
        middleware=[Middleware(BearerAuth, token=options.token)],
        lifespan=lifespan,
    )
    app.state.service = service
    return app
