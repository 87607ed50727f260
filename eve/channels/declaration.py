"""A channel as the server mounts it: its name, kind, URL path and the kind's options."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.routing import BaseRoute

from eve.authoring.channels import ChannelHandler
from eve.channels.kind_modules import load_kind
from eve.channels.mount import Authenticate, ChannelMount, StartHook
from eve.sessions import SessionService

#: where a channel's routes live unless its declaration says ``path=``
CHANNELS_PREFIX = "/channels"


class ChannelDeclaration(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    #: a key of ``KIND_MODULES``
    kind: str
    #: the URL path its routes live under, without a trailing slash
    path: str
    #: the kind's ``Options`` as plain data (names of variables, never secret values)
    options: dict[str, Any] = msgspec.field(default_factory=dict)
    #: a ``define_channel``'s handler, re-attached from the module map (None for the
    #: built-in kinds, whose behaviour is their module's)
    handler: ChannelHandler | None = None


def default_path(name: str) -> str:
    return f"{CHANNELS_PREFIX}/{name}"


def channel_routes(
    declaration: ChannelDeclaration,
    service: SessionService,
    authenticate: Authenticate,
    on_start: list[StartHook] | None = None,
) -> list[BaseRoute]:
    """The routes of one channel: its kind's module, imported now, given its mount; the
    hooks the kind asks to run once the service has started are added to ``on_start``.

    Raises ``ChannelKindUnavailable`` when the kind's module or its protocol package is not
    installed (the message names the extra)."""
    module = load_kind(declaration.kind)
    options = msgspec.convert(declaration.options, module.Options)
    mount: ChannelMount[Any] = ChannelMount(
        name=declaration.name,
        path=declaration.path.rstrip("/"),
        options=options,
        service=service,
        authenticate=authenticate,
        handler=declaration.handler,
        on_start=on_start if on_start is not None else [],
    )
    routes: list[BaseRoute] = module.routes(mount)
    return routes
