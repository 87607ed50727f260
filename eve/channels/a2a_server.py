"""The routes of an ``a2a`` channel, built on the a2a-sdk (imported only here and below).

``GET <path>/.well-known/agent-card.json`` serves the card, public as discovery needs;
``POST <path>`` is the JSON-RPC endpoint, where the SDK's dispatcher speaks the protocol and
``EveRequestHandler`` does each method over the session store. Every JSON-RPC request is
authenticated by the server's scheme (``mount.authenticate``) before it is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from eve.channels.a2a_card import agent_card
from eve.channels.a2a_handler import PRINCIPAL, EveRequestHandler
from eve.channels.mount import ChannelMount
from eve.errors import Unauthorized

if TYPE_CHECKING:
    # the kind's module imports this one when it builds its routes
    from eve.channels.kinds.a2a import Options

#: where the route puts the principal it verified, for the dispatcher's context builder
_PRINCIPAL_STATE = "a2a_principal"


class _PrincipalContext(DefaultServerCallContextBuilder):
    """The SDK's call context, with the verified principal and without the credentials."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        headers = context.state.get("headers", {})
        # the handler never needs the token, so it is not carried where it could be logged
        headers.pop("authorization", None)
        context.state[PRINCIPAL] = getattr(request.state, _PRINCIPAL_STATE)
        return context


def a2a_routes(mount: ChannelMount[Options]) -> list[BaseRoute]:
    dispatcher = JsonRpcDispatcher(EveRequestHandler(mount), context_builder=_PrincipalContext())

    async def rpc(request: Request) -> Response:
        try:
            principal = await mount.authenticate(request)
        except Unauthorized as error:
            return _refused(error)
        setattr(request.state, _PRINCIPAL_STATE, principal)
        return await dispatcher.handle_requests(request)

    async def card(request: Request) -> Response:
        options = mount.options
        base = options.public_url or str(request.base_url)
        served = agent_card(
            mount.setup,
            name=options.name or mount.setup.app_root.name,
            description=options.description,
            version=options.version,
            url=base.rstrip("/") + mount.path,
            bearer=await _needs_token(mount),
        )
        return JSONResponse(agent_card_to_dict(served))

    return [
        Route(mount.path, rpc, methods=["POST"]),
        Route(mount.path + AGENT_CARD_WELL_KNOWN_PATH, card, methods=["GET"]),
    ]


async def _needs_token(mount: ChannelMount[Options]) -> bool:
    """Whether the server refuses a request that carries no credentials."""
    bare = Request({"type": "http", "method": "POST", "path": mount.path, "headers": []})
    try:
        await mount.authenticate(bare)
    except Unauthorized:
        return True
    return False


def _refused(error: Unauthorized) -> Response:
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": str(error), "data": {"code": error.code}},
    }
    return JSONResponse(
        body, status_code=error.http_status, headers={"WWW-Authenticate": 'Bearer realm="eve"'}
    )
