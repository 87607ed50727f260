"""The one timeout of a connection's requests: it stops while a person is waited for.

``connect_timeout_seconds`` and ``call_timeout_seconds`` measure the server, not a person:
while one answers a server's elicitation or a sampling approval (``connections.asking``),
or signs in (OAuth, ``connections.oauth_client``), every clock of the connection that is
running stops. After an answer it starts again with the time it had left; after a sign-in
with its whole time (``renew``), since the request the server refused is sent again
afterwards: a sign-in that began with the time nearly spent (the discovery and the
registration before it took it) would otherwise fail the connect the person just signed
in for. A connect, a listing and a tool call are each bounded by one ``Deadline``; the
pool pauses them all while a person signs in, and a call's own asks pause that call's.

The deadlines of one event loop share one timer (``Watch``) instead of each scheduling and
cancelling its own, as ``asyncio.timeout`` does: a tool call takes a millisecond and its
timeout is seconds, so the timer set for the earliest deadline usually outlives many
calls, and a call costs a set insertion instead of a heap push, a cancel and, every
hundred calls, a heap rebuild (bench/mcp_call). When the timer fires, the overdue
deadlines cancel their tasks (turned into ``TimeoutError`` as ``asyncio.timeout`` does)
and it is set again for the earliest one left.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType


class Watch:
    """The timer of one event loop's deadlines: set no later than the earliest of them."""

    __slots__ = ("_at", "_handle", "loop", "running")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.running: set[Deadline] = set()
        self._handle: asyncio.TimerHandle | None = None
        self._at = 0.0

    def arm(self, when: float) -> None:
        """Make sure the timer fires by ``when``."""
        if self._handle is None or when < self._at:
            if self._handle is not None:
                self._handle.cancel()
            self._at = when
            self._handle = self.loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        now = self.loop.time()
        earliest: float | None = None
        for deadline in list(self.running):
            when = deadline.when
            if when is None:
                continue
            if when <= now:
                deadline.expire()
            elif earliest is None or when < earliest:
                earliest = when
        if earliest is not None:
            self.arm(earliest)


_watches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Watch] = weakref.WeakKeyDictionary()


def loop_watch() -> Watch:
    """The running loop's watch."""
    loop = asyncio.get_running_loop()
    watch = _watches.get(loop)
    if watch is None:
        watch = _watches[loop] = Watch(loop)
    return watch


class Deadline:
    """``with Deadline(seconds):`` inside a task raises ``TimeoutError`` when the block runs
    longer than ``seconds``, not counting the time spent inside ``paused()``. Pausing
    outside the block (before it starts or after it ends) is allowed and changes nothing
    there. A plain context manager: entering and leaving await nothing, so no coroutine is
    made for them (it is on every tool call's path)."""

    __slots__ = (
        "_cancelling",
        "_expired",
        "_left",
        "_paused",
        "_task",
        "_watch",
        "seconds",
        "when",
    )

    def __init__(self, seconds: float, watch: Watch | None = None) -> None:
        self.seconds = seconds
        #: the loop time it runs out at; None while paused or outside its block
        self.when: float | None = None
        #: the time left when the clock stopped
        self._left = seconds
        #: how many pauses hold it (a sign-in and an ask may overlap)
        self._paused = 0
        self._watch = watch
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self._expired = False

    def __enter__(self) -> Deadline:
        task = asyncio.current_task()
        assert task is not None, "a deadline bounds a task"
        watch = self._watch
        if watch is None:
            watch = self._watch = loop_watch()
        self._task, self._cancelling, self._expired = task, task.cancelling(), False
        watch.running.add(self)
        if not self._paused:
            self._start(watch)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        task, self._task, self.when = self._task, None, None
        assert task is not None and self._watch is not None, "entered first"
        self._watch.running.discard(self)
        # as asyncio.timeout: our cancellation becomes TimeoutError, unless someone else
        # cancelled the task too (then it stays cancelled)
        if self._expired and task.uncancel() <= self._cancelling and kind is asyncio.CancelledError:
            raise TimeoutError from error

    def _start(self, watch: Watch) -> None:
        self.when = watch.loop.time() + self._left
        watch.arm(self.when)

    def expire(self) -> None:
        """The time is up: cancel the task inside the block (the watch calls this)."""
        if self._task is not None and not self._expired:
            self._expired, self.when = True, None
            self._task.cancel()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The clock stands still inside this block."""
        self.pause()
        try:
            yield
        finally:
            self.resume()

    def pause(self) -> None:
        if self._paused == 0 and self.when is not None:
            assert self._watch is not None
            self._left = max(self.when - self._watch.loop.time(), 0.0)
            self.when = None
        self._paused += 1

    def renew(self) -> None:
        """Give the clock its whole time again when it next starts (while paused)."""
        assert self._paused, "a running clock is renewed by ending its block"
        self._left = self.seconds

    def resume(self) -> None:
        self._paused -= 1
        if self._paused == 0 and self._task is not None and not self._expired:
            assert self._watch is not None
            self._start(self._watch)
