"""The ``openai`` channel kind: an OpenAI-compatible endpoint over eve's durable sessions.

Routes under the channel's path (docs/channels/openai.md): ``GET v1/models``,
``POST v1/chat/completions`` (``openai_chat``), ``POST v1/responses``,
``GET v1/responses/{id}`` and ``POST v1/responses/{id}/cancel`` (``openai_responses``).
Callers authenticate as on the session API (``Authorization: Bearer <EVE_API_TOKEN>``,
which is how OpenAI's clients send their ``api_key``); errors take OpenAI's shape.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from eve.channels import openai_chat
from eve.channels.mount import ChannelMount
from eve.channels.openai_responses import (
    ResponseRef,
    await_response,
    read_response,
    response_events,
    sse,
    start_response,
)
from eve.channels.openai_wire import (
    SESSION_HEADER,
    ChatRequest,
    ResponsesRequest,
    error_response,
    parse_response_id,
    read_request,
)
from eve.channels.sessions import ChannelSessions
from eve.errors import ChannelModelUnknown, ChannelRequestInvalid, EveError
from eve.sessions.idempotency import HEADER as IDEMPOTENCY_HEADER
from eve.sessions.idempotency import parse_key


class Options(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    #: the model id the endpoint lists and answers to (default: the channel's name)
    model: str | None = None


Handler = Callable[[Request, ChannelSessions], Awaitable[Response]]


class _Endpoint:
    def __init__(self, mount: ChannelMount[Options]) -> None:
        self.mount = mount
        self.model = mount.options.model or mount.name

    def route(self, path: str, handler: Handler, method: str) -> Route:
        async def endpoint(request: Request) -> Response:
            try:
                principal = await self.mount.authenticate(request)
                return await handler(request, self.mount.sessions(principal))
            except EveError as error:
                return error_response(error)

        return Route(self.mount.path + path, endpoint, methods=[method])

    def check_model(self, model: str) -> None:
        if model != self.model:
            raise ChannelModelUnknown(
                f"the model {model!r} is not served here; this endpoint serves {self.model!r}",
                model=model,
            )

    def ref(self, response_id: str, *, param: str | None = None) -> ResponseRef:
        session_id, turn_id, start = parse_response_id(response_id, param=param)
        return ResponseRef(
            session_id=session_id,
            turn_id=turn_id,
            start=start,
            model=self.model,
            label=self.mount.name,
        )

    # --- routes ------------------------------------------------------------------------

    def _model(self) -> dict[str, object]:
        return {"id": self.model, "object": "model", "created": 0, "owned_by": "eve"}

    async def models(self, request: Request, sessions: ChannelSessions) -> Response:
        return JSONResponse({"object": "list", "data": [self._model()]})

    async def one_model(self, request: Request, sessions: ChannelSessions) -> Response:
        self.check_model(request.path_params["model"])
        return JSONResponse(self._model())

    async def chat(self, request: Request, sessions: ChannelSessions) -> Response:
        body = await read_request(request, ChatRequest)
        self.check_model(body.model)
        session_id = request.headers.get(SESSION_HEADER)
        key = parse_key(request.headers.get(IDEMPOTENCY_HEADER))
        started = await openai_chat.start_chat(sessions, body, session_id, key)
        turn = openai_chat.ChatTurn(started=started, model=self.model)
        if body.stream:
            include = body.stream_options is not None and body.stream_options.include_usage
            return openai_chat.stream(sessions, turn, include_usage=include)
        return await openai_chat.complete(sessions, turn)

    async def create_response(self, request: Request, sessions: ChannelSessions) -> Response:
        body = await read_request(request, ResponsesRequest)
        self.check_model(body.model)
        previous = body.previous_response_id
        session_id = None
        if previous is not None:
            session_id = self.ref(previous, param="previous_response_id").session_id
        key = parse_key(request.headers.get(IDEMPOTENCY_HEADER))
        started = await start_response(sessions, body, session_id, key)
        ref = ResponseRef.of(started, model=self.model, label=self.mount.name)
        if body.stream:
            return self._stream(sessions, ref, after=-1)
        return JSONResponse(await await_response(sessions, ref))

    async def get_response(self, request: Request, sessions: ChannelSessions) -> Response:
        ref = self.ref(request.path_params["response_id"])
        await sessions.summary(ref.session_id)  # an unknown session is a 404 here
        if request.query_params.get("stream") == "true":
            raw = request.query_params.get("starting_after", "-1")
            if not raw.lstrip("-").isdigit():
                raise ChannelRequestInvalid(
                    "`starting_after` is a sequence number", param="starting_after"
                )
            return self._stream(sessions, ref, after=int(raw))
        return JSONResponse(await read_response(sessions, ref))

    async def cancel_response(self, request: Request, sessions: ChannelSessions) -> Response:
        ref = self.ref(request.path_params["response_id"])
        if await sessions.cancel(ref.session_id):
            return JSONResponse(await await_response(sessions, ref))
        return JSONResponse(await read_response(sessions, ref))

    def _stream(self, sessions: ChannelSessions, ref: ResponseRef, *, after: int) -> Response:
        async def events() -> AsyncIterator[str]:
            async for event in response_events(sessions, ref):
                if event is None or event["sequence_number"] > after:
                    yield sse(event)

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
        )


def routes(mount: ChannelMount[Options]) -> list[BaseRoute]:
    endpoint = _Endpoint(mount)
    responses = "/v1/responses/{response_id}"
    return [
        endpoint.route("/v1/models", endpoint.models, "GET"),
        endpoint.route("/v1/models/{model}", endpoint.one_model, "GET"),
        endpoint.route("/v1/chat/completions", endpoint.chat, "POST"),
        endpoint.route("/v1/responses", endpoint.create_response, "POST"),
        endpoint.route(responses, endpoint.get_response, "GET"),
        endpoint.route(responses + "/cancel", endpoint.cancel_response, "POST"),
    ]
