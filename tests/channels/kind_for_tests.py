"""A channel kind for the framework's tests, in the shape every kind has: ``Options`` and
``routes(mount)``. Its one route answers with its options, so a test sees them arrive."""

from __future__ import annotations

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from eve.channels.mount import ChannelMount


class Options(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    greeting: str = "hello"
    signing_secret_env: str = "TEST_SIGNING_SECRET"


def routes(mount: ChannelMount[Options]) -> list[BaseRoute]:
    async def hello(request: Request) -> Response:
        await mount.authenticate(request)
        return JSONResponse({"greeting": mount.options.greeting, "channel": mount.name})

    return [Route(mount.path, hello, methods=["POST"])]
