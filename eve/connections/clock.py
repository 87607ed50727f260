"""The one timeout of a connection's requests: it stops while a person is waited for.

``connect_timeout_seconds`` and ``call_timeout_seconds`` measure the server, not a person:
while one answers a server's elicitation or a sampling approval (``connections.asking``),
or signs in (OAuth, ``connections.oauth_client``), every clock of the connection that is
running stops, and starts again with the time it had left when the person is done. A
connect, a listing and a tool call are each bounded by one ``Deadline``; the pool pauses
them all while a person signs in, and a call's own asks pause that call's.

It is an ``asyncio.timeout`` scope whose deadline is moved, not ``wait_for``: no task is
started per request (bench/mcp_call).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType


class Deadline:
    """``async with Deadline(seconds):`` raises ``TimeoutError`` when the block runs longer
    than ``seconds``, not counting the time spent inside ``paused()``. Pausing outside the
    block (before it starts or after it ends) is allowed and changes nothing there."""

    __slots__ = ("_left", "_paused", "_scope", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._scope: asyncio.Timeout | None = None
        #: the time left when the clock stopped
        self._left = seconds
        #: how many pauses hold it (a sign-in and an ask may overlap)
        self._paused = 0

    async def __aenter__(self) -> Deadline:
        loop = asyncio.get_running_loop()
        scope = asyncio.timeout_at(None if self._paused else loop.time() + self._left)
        await scope.__aenter__()
        self._scope = scope
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        scope, self._scope = self._scope, None
        assert scope is not None, "entered first"
        await scope.__aexit__(kind, error, traceback)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The clock stands still inside this block."""
        self.pause()
        try:
            yield
        finally:
            self.resume()

    def pause(self) -> None:
        scope = self._scope
        if self._paused == 0 and scope is not None and not scope.expired():
            deadline = scope.when()
            if deadline is not None:
                self._left = max(deadline - asyncio.get_running_loop().time(), 0.0)
            scope.reschedule(None)
        self._paused += 1

    def resume(self) -> None:
        self._paused -= 1
        scope = self._scope
        if self._paused == 0 and scope is not None and not scope.expired():
            scope.reschedule(asyncio.get_running_loop().time() + self._left)
