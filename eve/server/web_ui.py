"""The dev UI: static HTML, CSS and ES modules (package data under ``eve/server/ui``)
served at ``/`` and ``/ui/<file>``, each answer with a strict Content-Security-Policy.

The files are read once, on first request; nothing is built and nothing is fetched from
elsewhere. The page speaks only the public ``/eve/v1`` routes, by relative URLs, so it
works wherever the app is mounted. It holds no secret, so it is public even when the API
needs a token: the page asks for the token and sends it as the bearer.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

#: the files the UI is made of, and how each is served
UI_FILES: dict[str, str] = {
    "index.html": "text/html; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "api.js": "text/javascript; charset=utf-8",
    "login.js": "text/javascript; charset=utf-8",
    "dom.js": "text/javascript; charset=utf-8",
    "sessions.js": "text/javascript; charset=utf-8",
    "session.js": "text/javascript; charset=utf-8",
    "conversation.js": "text/javascript; charset=utf-8",
    "form_fields.js": "text/javascript; charset=utf-8",
    "agent.js": "text/javascript; charset=utf-8",
}

#: where the page may connect beside its own origin: the OIDC issuer's token endpoint
#: (``auth_config.token_endpoint_origin``), known once the server fetched its discovery
ExtraConnect = Callable[[], str | None]


def content_security_policy(connect: str | None = None) -> str:
    """Only this origin's files run, nothing inline, no frames, no forms posted anywhere;
    the page fetches from its own origin and ``connect`` (the issuer, to redeem a login)."""
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            f"connect-src 'self' {connect}" if connect else "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )


CONTENT_SECURITY_POLICY = content_security_policy()

SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    # a new eve version's files replace the old ones at once
    "cache-control": "no-cache",
}

#: paths the bearer token does not guard (``auth.authorized``)
UI_PATH_PREFIX = "/ui/"


def is_ui_path(path: str) -> bool:
    return path == "/" or path.startswith(UI_PATH_PREFIX)


@cache
def ui_file(name: str) -> bytes:
    return resources.files("eve.server").joinpath("ui", name).read_bytes()


def ui_routes(connect: ExtraConnect = lambda: None) -> list[Route]:
    def file_response(name: str) -> Response:
        extra = connect()
        headers = SECURITY_HEADERS
        if extra is not None:
            headers = {**headers, "content-security-policy": content_security_policy(extra)}
        return Response(ui_file(name), media_type=UI_FILES[name], headers=headers)

    async def index(request: Request) -> Response:
        return file_response("index.html")

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in UI_FILES or name == "index.html":
            return PlainTextResponse("not found", status_code=404, headers=SECURITY_HEADERS)
        return file_response(name)

    return [
        Route("/", index, methods=["GET", "HEAD"]),
        Route(UI_PATH_PREFIX + "{name}", asset, methods=["GET", "HEAD"]),
    ]
