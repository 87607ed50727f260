"""Channel definitions: what ``agent/channels/<name>.py`` declares, one door to the agent.

A declaration is data: the kind, where its routes live (``path``) and the kind's options,
which the compiler checks against the kind's ``Options`` and writes into the manifest. Only
``define_channel`` (the ``custom`` kind) carries code, its handler, re-attached at resolve
time from the module map like a tool's execute. Secrets never sit in options: an option
names the environment variable that holds one (``signing_secret_env="SLACK_SIGNING_SECRET"``).

Nothing here imports a kind module or a protocol package: writing ``ai_sdk()`` costs an
agent nothing until a server mounts it.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from eve.authoring._caller import caller_module
from eve.errors import AuthoringError

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from eve.channels.sessions import ChannelSessions

#: ``async def handler(request, sessions) -> Response``: a ``define_channel`` handler gets
#: the Starlette request and the session facade bound to the request's principal
ChannelHandler = Callable[["Request", "ChannelSessions"], Awaitable["Response"]]
#: how a ``define_channel`` route authenticates: the server's bearer token, or nothing (a
#: webhook that verifies its caller itself, e.g. by a signature)
CustomAuth = Literal["token", "none"]
#: the HTTP methods a ``define_channel`` route may answer
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")

#: one path segment of a channel's mount path (no parameters: those belong to routes)
_SEGMENT = re.compile(r"^[A-Za-z0-9._~-]+$")
#: one segment of a route's sub-path: plain, or a Starlette parameter (``{session_id}``)
_ROUTE_SEGMENT = re.compile(r"^([A-Za-z0-9._~-]+|\{[A-Za-z_][A-Za-z0-9_]*(:[a-z]+)?\})$")


@dataclass(frozen=True, kw_only=True)
class ChannelRoute:
    """One route of a ``define_channel``: a method and a sub-path under the channel's path."""

    method: str
    #: ``""`` (the channel's path itself) or ``/...``
    path: str


@dataclass(frozen=True, kw_only=True)
class ChannelDefinition:
    """A channel as authored. The file name under ``channels/`` is its name."""

    #: a key of ``eve.channels.kinds.KIND_MODULES``
    kind: str
    #: where its routes live; None: ``/channels/<name>``
    path: str | None = None
    #: the kind's options as written (checked against the kind's ``Options`` at compile)
    options: dict[str, Any] = field(default_factory=dict)
    #: the ``custom`` kind's routes and handler
    routes: tuple[ChannelRoute, ...] = ()
    handler: ChannelHandler | None = None
    #: the line of the call that made it, for diagnostics about its options
    line: int | None = None
    #: the module whose code made this definition (see the export rule)
    defined_in: str | None = None


def _check_path(path: str | None, what: str) -> str | None:
    if path is None:
        return None
    segments = path.split("/")
    if not path.startswith("/") or path == "/" or not all(_SEGMENT.match(s) for s in segments[1:]):
        raise AuthoringError(
            f"{what}: path={path!r} must be an absolute URL path like '/channels/chat' "
            "(letters, digits, '.', '_', '~', '-' between slashes, no trailing slash)"
        )
    return path


def _declare(kind: str, path: str | None, options: dict[str, Any]) -> ChannelDefinition:
    # two frames up: the author's call of ai_sdk(...) and friends
    frame = sys._getframe(2)
    return ChannelDefinition(
        kind=kind,
        path=_check_path(path, f"{kind}(...)"),
        options=options,
        line=frame.f_lineno,
        defined_in=caller_module(3),
    )


def ai_sdk(*, path: str | None = None, **options: Any) -> ChannelDefinition:
    """The Vercel AI SDK UI message stream (``useChat``); see docs/channels/ai_sdk.md."""
    return _declare("ai_sdk", path, options)


def ag_ui(*, path: str | None = None, **options: Any) -> ChannelDefinition:
    """AG-UI (CopilotKit): ``RunAgentInput`` in, AG-UI events out; docs/channels/ag_ui.md."""
    return _declare("ag_ui", path, options)


def a2a(*, path: str | None = None, **options: Any) -> ChannelDefinition:
    """An A2A server with its agent card; see docs/channels/a2a.md."""
    return _declare("a2a", path, options)


def mcp(*, path: str | None = None, **options: Any) -> ChannelDefinition:
    """The agent as an MCP server (Streamable HTTP); see docs/channels/mcp.md."""
    return _declare("mcp", path, options)


def openai(*, path: str | None = None, **options: Any) -> ChannelDefinition:
    """OpenAI-compatible chat completions and responses; see docs/channels/openai.md."""
    return _declare("openai", path, options)


def slack(*, path: str | None = None, **options: Any) -> ChannelDefinition:
    """A Slack app (Events API, interactivity); see docs/channels/slack.md."""
    return _declare("slack", path, options)


def _route(spec: object) -> ChannelRoute:
    method, _, sub = spec.partition(" ") if isinstance(spec, str) else ("", "", "")
    segments = sub.split("/")
    if method not in METHODS or not (
        sub == "/" or (sub.startswith("/") and all(_ROUTE_SEGMENT.match(s) for s in segments[1:]))
    ):
        raise AuthoringError(
            f"define_channel: route {spec!r} must be 'METHOD /sub-path' with METHOD one of "
            f"{', '.join(METHODS)} and a path under the channel's, e.g. 'POST /' or "
            "'GET /sessions/{session_id}'"
        )
    return ChannelRoute(method=method, path="" if sub == "/" else sub)


def define_channel(
    *,
    routes: Sequence[str],
    handler: ChannelHandler,
    auth: CustomAuth = "token",
    path: str | None = None,
) -> ChannelDefinition:
    """Your own routes for any other webhook or protocol: the ``custom`` kind.

    Args:
        routes: ``"METHOD /sub-path"`` strings, under the channel's path (``"POST /"`` is
            the path itself; ``{name}`` segments are path parameters).
        handler: ``async def handler(request, sessions) -> Response``; ``sessions`` is the
            session facade (``ChannelSessions``) bound to who made the request.
        auth: ``"token"``, the server's bearer token (the default), or ``"none"`` for a
            caller that proves itself otherwise (a signature the handler must verify).
        path: where the routes live; ``/channels/<file name>`` when not given.
    """
    parsed = tuple(_route(spec) for spec in routes)
    if not parsed:
        raise AuthoringError("define_channel: give at least one route ('POST /')")
    seen = [(r.method, r.path) for r in parsed]
    if len(set(seen)) != len(seen):
        raise AuthoringError(f"define_channel: a route is listed twice in {list(routes)!r}")
    # the custom kind awaits it: a plain function would fail at the first request
    if not (
        inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(type(handler).__call__)
    ):
        raise AuthoringError(
            f"define_channel: handler must be `async def handler(request, sessions)`, "
            f"not {handler!r}"
        )
    if auth not in ("token", "none"):
        raise AuthoringError(f"define_channel: auth={auth!r} must be 'token' or 'none'")
    definition = _declare(
        "custom",
        path,
        {"routes": [{"method": r.method, "path": r.path} for r in parsed], "auth": auth},
    )
    return ChannelDefinition(
        kind=definition.kind,
        path=definition.path,
        options=definition.options,
        routes=parsed,
        handler=handler,
        line=definition.line,
        defined_in=definition.defined_in,
    )
