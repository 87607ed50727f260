"""How long a ``POST`` took inside the server, in its answer's ``Server-Timing`` header.

A client's time for a request is its own too: the network, and its event loop, which may be
busy when the answer arrives (the scale benchmark's clients hold hundreds of sessions in
one process). The header says what the server spent, from the request read off the socket
to its answer's head written: ``answer;dur=3.1`` in milliseconds, and for a message, where
its claim ran and how long the request waited for it: ``claim;dur=0.4;desc="loop"``
(``sessions/claim_now.py``). Browsers show it in their developer tools. Only POSTs carry
it: a stream's head is written long before it ends.

"Read off the socket" is when uvicorn's parser began the request (``serving_protocol``), as the
event loop read its bytes; where that is unknown (a server other than ``eve serve``'s), it
is when the app was called. The bytes' wait in the kernel before the loop read them is in
neither: the benchmark's ``/health`` probe measures that wait.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from eve.server.serving import READ_AT, answered
from eve.sessions.claim_now import CLAIM_TIMING, ClaimTiming

HEADER = b"server-timing"


class ServerTiming:
    """Adds ``Server-Timing`` to every POST's answer; and once any request is answered, what
    it left behind runs as the turns' work (``serving.answered``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._timed(scope, receive, send)
        finally:
            answered()

    async def _timed(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        began: float = scope.get(READ_AT) or time.perf_counter()
        claim = ClaimTiming()
        token = CLAIM_TIMING.set(claim)

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                value = timing(time.perf_counter() - began, claim)
                headers = [*message.get("headers", []), (HEADER, value)]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, timed)
        finally:
            CLAIM_TIMING.reset(token)


def timing(answer_seconds: float, claim: ClaimTiming) -> bytes:
    """The header's value."""
    value = b"answer;dur=%.2f" % (answer_seconds * 1000)
    if claim.where is not None:
        value += b', claim;dur=%.2f;desc="%s"' % (claim.seconds * 1000, claim.where.encode())
    return value
