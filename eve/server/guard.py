"""ASGI middleware that refuses, before any route runs, what a hostile page can send: a
``Host`` the server does not answer to (DNS rebinding), and a state-changing request from
another origin or with a body a form can post (CSRF).

Browsers send a cross-origin POST without asking first when it is a "simple request": a
form, or a ``fetch`` in ``no-cors`` mode, with a ``text/plain``, form-encoded or multipart
body. Requiring ``application/json`` turns every other request into one the browser must
ask about first (a CORS preflight), which eve never approves; the ``Origin`` and
``Sec-Fetch-Site`` checks refuse the simple ones outright. A program (curl, ``eve.client``)
sends no ``Origin`` and no ``Sec-Fetch-Site``, and is unaffected.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from eve.errors import CrossOriginRefused, HostNotAllowed, RequestError, UnsupportedContentType
from eve.server.answers import refusal
from eve.server.auth import PUBLIC_PATHS, route_path
from eve.server.hosts import AllowedHosts, HostPort, parse_host, parse_origin, shown_header

#: methods that change nothing on eve's routes, so a page of any origin may send them (it
#: cannot read the answer, and the Host check keeps a rebound page out)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: ``Sec-Fetch-Site`` values a browser sends for a page that is not the server's own
FOREIGN_SITES = frozenset({"cross-site", "same-site"})
JSON_MEDIA_TYPE = "application/json"


class RequestGuard:
    """Answers a refused request with its named error; passes the others on unchanged."""

    def __init__(self, app: ASGIApp, allowed: AllowedHosts) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = refused_request(Request(scope), self.allowed)
            if refused is not None:
                await refusal(refused)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def refused_request(request: Request, allowed: AllowedHosts) -> RequestError | None:
    """Why ``request`` is refused, or None. Health answers any host: a load balancer checks
    it by address, and it tells nothing."""
    if route_path(request) in PUBLIC_PATHS:
        return None
    headers = request.headers
    raw_host = headers.get("host", "")
    host = parse_host(raw_host)
    if host is None or not allowed.allows(host):
        return _host_refused(raw_host)
    if request.method in SAFE_METHODS:
        return None
    return _foreign_origin(headers, host, allowed) or _not_json(headers)


def _host_refused(raw_host: str) -> HostNotAllowed:
    what = f"the host {shown_header(raw_host)!r}" if raw_host else "a request without a Host"
    return HostNotAllowed(
        f"this server does not answer {what}: reach it by an allowed name (by default "
        "127.0.0.1, localhost or [::1], and the address it listens on), or allow the name "
        "with `eve serve --allowed-host NAME`, EVE_ALLOWED_HOSTS, or eve_app(allowed_hosts=...)",
        host=shown_header(raw_host),
    )


def _foreign_origin(
    headers: Headers, host: HostPort, allowed: AllowedHosts
) -> CrossOriginRefused | None:
    raw_origin = headers.get("origin")
    if raw_origin is not None:
        origin = parse_origin(raw_origin)
        if origin is None or not allowed.allows_origin(origin, host):
            return CrossOriginRefused(
                f"a page of the origin {shown_header(raw_origin)!r} may not change anything "
                "on this server: only its own pages may, and programs that send no Origin",
                origin=shown_header(raw_origin),
            )
    site = headers.get("sec-fetch-site", "").lower()
    if site in FOREIGN_SITES:
        return CrossOriginRefused(
            f"a page of another site (Sec-Fetch-Site: {site}) may not change anything on "
            "this server: only its own pages may, and programs",
            origin=site,
        )
    return None


#: headers a page cannot put on a request it sends to another origin without a CORS
#: preflight, which eve never grants: a form post that carries one is a signed webhook
#: (Slack's interactivity sends forms), not a page's cross-site form
SIGNED_WEBHOOK_HEADERS = ("x-slack-signature",)


def _not_json(headers: Headers) -> UnsupportedContentType | None:
    if any(name in headers for name in SIGNED_WEBHOOK_HEADERS):
        return None  # the channel verifies the signature itself
    content_type = headers.get("content-type")
    if content_type is None:
        if not _has_body(headers):
            return None  # cancel, reset, compact: nothing to declare
        content_type = ""
    elif content_type.partition(";")[0].strip().lower() == JSON_MEDIA_TYPE:
        return None
    declared = shown_header(content_type) if content_type else "no content type"
    return UnsupportedContentType(
        f"a request body must be sent as {JSON_MEDIA_TYPE} (got {declared}): forms and "
        "text/plain posts, which a page of any origin can send, are refused",
        content_type=shown_header(content_type),
    )


def _has_body(headers: Headers) -> bool:
    return headers.get("content-length", "0").strip() != "0" or "transfer-encoding" in headers
