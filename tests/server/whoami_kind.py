"""A channel kind for the tests: ``GET <path>/whoami`` answers the principal its
``mount.authenticate`` found, as a kind's routes see it."""

from __future__ import annotations

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from eve.channels.mount import ChannelMount
from eve.errors import Unauthorized


class Options(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


def routes(mount: ChannelMount[Options]) -> list[BaseRoute]:
    async def whoami(request: Request) -> Response:
        try:
            principal = await mount.authenticate(request)
        except Unauthorized as refused:
            return JSONResponse({"ok": False, "code": refused.code}, status_code=401)
        return JSONResponse({"ok": True, "id": principal.id, "kind": principal.kind})

    return [Route(mount.path + "/whoami", whoami, methods=["GET"])]
