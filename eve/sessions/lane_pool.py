"""A lane's threads: the standard library's pool, which also runs a call answered through a
``Reply`` of the caller's (``loop_replies.py``) rather than a ``Future`` of its own.

The calls the event loop hands over with ``lane_calls.in_thread`` and those submitted
(DBOS's, through the loop's executor) share the pool's threads and its bound; only the
handle each answers differs. (``ThreadPoolExecutor``'s queue and thread count are its
internals, the same from Python 3.8 to 3.14; ``tests/sessions/test_lane_calls.py`` holds
them.)
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.thread import BrokenThreadPool
from typing import Any

from eve.sessions.loop_replies import Reply


class _Answered:
    """A work item as the pool's threads run one (``run``; ``future`` is what a shutdown
    with ``cancel_futures`` cancels)."""

    __slots__ = ("call", "future")

    def __init__(self, future: Reply, call: Callable[[], Any]) -> None:
        self.future = future
        self.call = call

    def run(self, *_context: object) -> None:
        # (Python 3.14's threads pass a context of theirs: none is needed here)
        reply = self.future
        if not reply.set_running_or_notify_cancel():
            return  # its caller was cancelled before it ran
        try:
            result = self.call()
        except BaseException as error:
            reply.set_exception(error)
        else:
            reply.set_result(result)


class LanePool(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` with ``answer``."""

    def answer(self, reply: Reply, call: Callable[[], Any]) -> None:
        """Run ``call`` in its turn on one of the pool's threads, and settle ``reply`` with
        how it ended."""
        with self._shutdown_lock:
            if self._broken:
                raise BrokenThreadPool(self._broken)
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._work_queue.put(_Answered(reply, call))  # type: ignore[arg-type]
            self._adjust_thread_count()
