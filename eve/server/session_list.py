"""``GET /eve/v1/sessions``: a page of sessions, newest first (``?limit=&cursor=``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from eve.server.auth import principal_of
from eve.sessions import SessionService
from eve.sessions.listing import parse_limit


def session_list(service: SessionService) -> Callable[[Request], Awaitable[Response]]:
    """The route's handler over ``service``."""

    async def sessions(request: Request) -> Response:
        limit = parse_limit(request.query_params.get("limit"))
        cursor = request.query_params.get("cursor") or None
        principal = principal_of(request)
        page = await service.list_page(limit=limit, cursor=cursor, principal=principal)
        return Response(msgspec.json.encode(page), media_type="application/json")

    return sessions
