"""The followed event streams of an app: each ends when its client leaves, or when the
server stops.

A followed stream never finishes by itself (a client, a dev UI tab, follows until it
leaves). Left open, a stopping uvicorn waits out its graceful timeout, then cancels each
such request with a traceback: 100 followers were 100 tracebacks. So the server ends them
first (``end_streams``), each as a complete response, and says so in one line; the clients
reconnect from the next index they need.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.types import Message, Receive, Scope, Send

log = logging.getLogger("eve.server")


class Followers:
    """The followed event streams an app serves, and whether its server is stopping."""

    def __init__(self) -> None:
        self.closing = asyncio.Event()
        self.open = 0

    def end(self) -> None:
        if self.open:
            log.warning(
                "ending %d followed event stream(s) for shutdown; "
                "their clients reconnect from their next index",
                self.open,
            )
        self.closing.set()


class FollowedStream(StreamingResponse):
    """A followed stream that ends when its client leaves, as any does, or when the server
    stops: then as a complete response (the client sees the stream end, not an error)."""

    def __init__(self, content: AsyncIterator[bytes], *, followers: Followers) -> None:
        super().__init__(content, media_type="application/x-ndjson")
        self.followers = followers
        self.ended_by_server = False

    async def listen_for_disconnect(self, receive: Receive) -> None:
        # Starlette stops the stream once this returns: when the client leaves, or now also
        # when the server stops
        leaving = asyncio.ensure_future(super().listen_for_disconnect(receive))
        closing = asyncio.ensure_future(self.followers.closing.wait())
        try:
            done, _ = await asyncio.wait({leaving, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            leaving.cancel()
            closing.cancel()
        self.ended_by_server = leaving not in done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        #: whether the response has started, and whether its last body was sent
        state = {"started": False, "ended": False}

        async def sending(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.start":
                state["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                state["ended"] = True

        self.followers.open += 1
        try:
            await super().__call__(scope, receive, sending)
        finally:
            self.followers.open -= 1
        if self.ended_by_server and state["started"] and not state["ended"]:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def end_streams(app: Starlette) -> None:
    """End the followed event streams of an app ``create_app`` made (its server stops)."""
    followers: Followers = app.state.followers
    followers.end()
