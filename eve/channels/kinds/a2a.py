"""The ``a2a`` channel kind: the agent as an A2A server (protocol 1.0, JSON-RPC binding).

Two routes under the channel's path: ``GET <path>/.well-known/agent-card.json`` (the card,
public, as discovery needs) and ``POST <path>`` (JSON-RPC: SendMessage, SendStreamingMessage,
GetTask, ListTasks, CancelTask, SubscribeToTask). The a2a-sdk (``eve-durable[a2a]``) is
imported only when the routes are built (``eve.channels.a2a_server``).
"""

from __future__ import annotations

import importlib.util

import msgspec
from starlette.routing import BaseRoute

from eve.channels.mount import ChannelMount
from eve.errors import ChannelKindUnavailable

#: what the kind imports: the SDK, and the SSE response its streaming methods answer with
PACKAGES = ("a2a", "sse_starlette")


class Options(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    #: the agent's name on its card (default: the app's directory name)
    name: str | None = None
    #: the card's description (default: ``define_agent(description=...)``)
    description: str | None = None
    #: the agent's version on its card
    version: str = "1.0.0"
    #: the URL clients reach the server at, when a proxy stands in front of it (default:
    #: the URL the card was asked for at)
    public_url: str | None = None


def routes(mount: ChannelMount[Options]) -> list[BaseRoute]:
    missing = [name for name in PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ChannelKindUnavailable(
            f"the channel {mount.name!r} is an A2A server, which needs the a2a-sdk with its "
            f"HTTP server ({', '.join(missing)} is not installed): "
            "pip install 'eve-durable[a2a]'",
            kind="a2a",
            missing=missing[0],
            extra="a2a",
        )
    from eve.channels.a2a_server import a2a_routes

    return a2a_routes(mount)
