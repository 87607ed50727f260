"""The ``custom`` kind: a ``define_channel``'s own routes, each calling its handler.

The handler gets the Starlette request and the session facade bound to the request's
principal: the operator for the server's bearer token (``auth="token"``), or the channel
itself for ``auth="none"``, a webhook whose handler verifies its caller (a signature) on
its own. Like every kind it keeps no state: what it knows is in the session store.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from eve.auth import Principal
from eve.authoring.channels import ChannelHandler
from eve.channels.mount import ChannelMount
from eve.errors import ChannelHandlerInvalid, EveError, Unauthorized
from eve.server.answers import refusal

log = logging.getLogger("eve.channels")


class RouteOption(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    #: ``""`` (the channel's path) or ``/...`` below it
    path: str


class Options(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    routes: list[RouteOption]
    auth: Literal["token", "none"] = "token"


def channel_principal(name: str) -> Principal:
    """Who an ``auth="none"`` request is: the channel, until its handler knows better."""
    return Principal(id=f"channel:{name}", kind="channel", claims={"channel": name})


def routes(mount: ChannelMount[Options]) -> list[BaseRoute]:
    handler = mount.handler
    if handler is None:
        # a manifest's custom channel always has one (has_handler); a hand-built mount may not
        raise ChannelHandlerInvalid(
            f"channel '{mount.name}' is a define_channel without a handler: run `eve compile`",
            channel=mount.name,
        )
    endpoint = _endpoint(mount, handler)
    by_path: dict[str, list[str]] = {}
    for route in mount.options.routes:
        by_path.setdefault(mount.path + route.path, []).append(route.method)
    return [Route(path, endpoint, methods=methods) for path, methods in by_path.items()]


def _endpoint(
    mount: ChannelMount[Options], handler: ChannelHandler
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            principal = (
                await mount.authenticate(request)
                if mount.options.auth == "token"
                else channel_principal(mount.name)
            )
            response = await handler(request, mount.sessions(principal))
        except Unauthorized as refused:
            return refusal(refused, **{"www-authenticate": "Bearer"})
        except EveError as error:
            # a refused session operation (not found, not waiting, too long) keeps its
            # status and code, as the session API answers it
            return refusal(error)
        if not isinstance(response, Response):
            invalid = ChannelHandlerInvalid(
                f"the handler of channel '{mount.name}' returned {type(response).__name__}, "
                "not a Starlette Response (return JSONResponse(...), Response(...))",
                channel=mount.name,
            )
            log.error("%s", invalid)
            return refusal(invalid)
        return response

    return endpoint
