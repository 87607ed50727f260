"""A lane's thread answering a call of the event loop's without a ``concurrent.futures``
future: it settles the caller's asyncio future through the loop, several answers a wake-up.

``asyncio.to_thread`` hands a call to the loop's executor as ``submit`` (a ``Future`` with its
``Condition`` and lock, a work item) chained to an asyncio future by ``wrap_future`` (two
callbacks and their closures, a ``call_soon_threadsafe`` for the answer): at 1,000 live
sessions on SQLite that was 12 to 14 % of the loop thread's samples and 22 % of the objects a
middle collection walked, for about ten calls a turn, in a worker bound by the interpreter's
lock. Here the lane's thread holds the asyncio future itself (``LoopReply``) and puts its
answer in the loop's ``Answers``; the first answer since the loop last took them asks the
loop to (one ``call_soon_threadsafe``), and the others found queued meanwhile ride along.

What ``to_thread`` promised holds: a call whose caller was cancelled before its thread took it
never runs (the thread reads the future's state, as it read the ``Future``'s), one cancelled
while it runs runs to its end and its answer is dropped, and an exception reaches the caller
as raised.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable
from typing import Any, Protocol

#: how an answer settles its future: ``_returned``, ``_raised`` or ``_cancelled``
Settle = Callable[["asyncio.Future[Any]", Any], None]


class Reply(Protocol):
    """What a lane's thread settles for a call: the ``concurrent.futures.Future`` of a
    ``submit``, or the event loop's own future (``LoopReply``)."""

    def set_running_or_notify_cancel(self) -> bool: ...

    def set_result(self, result: Any) -> None: ...

    def set_exception(self, exception: BaseException | None) -> None: ...

    def cancel(self) -> bool: ...


class Answers:
    """The answers of one event loop's calls, as the lanes' threads give them, taken by the
    loop in one callback however many came meanwhile."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._lock = threading.Lock()
        self._given: list[tuple[Settle, asyncio.Future[Any], Any]] = []
        #: wake-ups asked of the loop (for tests and the benchmark: answers / this is the
        #: batching)
        self.wakeups = 0

    def give(self, settle: Settle, future: asyncio.Future[Any], what: Any) -> None:
        """From any thread: ``settle(future, what)`` on the loop."""
        with self._lock:
            self._given.append((settle, future, what))
            if len(self._given) > 1:
                return  # the loop was asked already, and has not taken them yet
            self.wakeups += 1
        # (RuntimeError: the loop is closed, nothing waits for the answer any more)
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._take)

    def _take(self) -> None:
        with self._lock:
            given, self._given = self._given, []
        for settle, future, what in given:
            # done already: its caller was cancelled meanwhile, nobody takes the answer
            if not future.done():
                settle(future, what)


def _returned(future: asyncio.Future[Any], value: Any) -> None:
    future.set_result(value)


def _raised(future: asyncio.Future[Any], error: BaseException) -> None:
    if isinstance(error, concurrent.futures.CancelledError):
        error = asyncio.CancelledError(*error.args)  # as ``wrap_future`` converts it
    try:
        future.set_exception(error)
    except TypeError as refused:  # StopIteration: an asyncio future refuses it
        future.set_exception(refused)


def _cancelled(future: asyncio.Future[Any], _nothing: None) -> None:
    future.cancel()


class LoopReply:
    """A call's asyncio future, as a lane's thread settles it (``Reply``)."""

    __slots__ = ("answers", "future")

    def __init__(self, future: asyncio.Future[Any], answers: Answers) -> None:
        self.future = future
        self.answers = answers

    def set_running_or_notify_cancel(self) -> bool:
        # (read from the lane's thread: a cancel the loop makes after it runs the call
        # anyway, and drops the answer, as with a ``Future`` that had started)
        return not self.future.cancelled()

    def set_result(self, result: Any) -> None:
        self.answers.give(_returned, self.future, result)

    def set_exception(self, exception: BaseException | None) -> None:
        self.answers.give(_raised, self.future, exception)

    def cancel(self) -> bool:
        """Cancelled before it ran (a lane shut down with ``cancel_futures``)."""
        self.answers.give(_cancelled, self.future, None)
        return True
