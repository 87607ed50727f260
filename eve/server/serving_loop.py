"""A worker's event loop that serves requests before the turns' work: uvloop's, with the
turns' callbacks run in slices between two looks at the sockets.

An event loop runs, at each turn, every callback that was ready when the turn began, then
looks at its sockets. At 1,000 live sessions a worker's loop has hundreds of the turns'
callbacks ready at once (a task waking from the model's sleep, a write's result coming
back from the writer's thread), so a turn of the loop took 40 to 100 ms, and a request
waited up to a turn for its bytes to be read and another for its task to start: a
``POST``'s ``202`` and a ``/health`` took 60 to 380 ms at p95, though each needs well under
a millisecond of the loop. Capping the turns that run (``EVE_TURN_LIMIT``) shortened the
turns of the loop but cost a quarter of the throughput.

Here nothing is capped: every callback still runs, in the order it was scheduled, but a
callback that does not serve a request waits in a queue of its own, run in slices
(``EVE_REQUEST_SLICE_MS``: ``slices.py``); what serves a request (its task's steps, the
futures it waits on) runs first: at once when no turns' work waits, else before the next
slice. What serves a request is told by its context: the task uvicorn starts for a request
runs in a context marked as serving (``serving.py``), until its answer is complete; a task
it starts (the turn a message starts) inherits the mark, and loses it with the answer.
Callbacks of uvloop's own (a socket's data, a timer, a thread's result) run as they always
did, at a turn of uvloop's loop.

Between two slices the loop asks whether a request waits on its sockets, through an epoll
set of its own that keeps the interpreter's lock (``request_sockets.py``): if one does, or a
request's call in a thread is out (its result comes back through uvloop's queue), it lets a
turn of uvloop's loop run (which reads the request) before the next slice; if none does,
the next slice runs at once. A turn of uvloop's loop lets the lock go and waits to have it
back behind the worker's threads, so the loop takes one only when a request needs it, and
at least every ``TURN_EVERY_SECONDS`` for its timers and the threads' results. Without that
set (not Linux) the loop takes a turn after every slice. What the slices cost is measured in
``docs/sessions.md``, *Back-pressure*.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, TypeVar, TypeVarTuple, Unpack, cast

import uvloop

from eve.server.request_sockets import EpollWatch, epoll_watch
from eve.server.serving import SERVING
from eve.server.slices import DEFAULT_SLICE_MS

if TYPE_CHECKING:
    from _typeshed import FileDescriptorLike

_Ts = TypeVarTuple("_Ts")
T = TypeVar("T")

#: the longest the turns' work runs without a turn of uvloop's loop (its timers, the
#: threads' results, the streams' sockets), when no request waits
TURN_EVERY_SECONDS = 0.010


class ServingLoop(uvloop.Loop):
    """uvloop's loop, deferring the callbacks that serve no request to slices."""

    #: it answers a request within about two slices, so a request may wait a little on its
    #: thread (``sessions.claim_now.patience_on``)
    requests_first = True

    def __init__(
        self,
        slice_seconds: float = DEFAULT_SLICE_MS / 1000,
        *,
        watch: EpollWatch | None = None,
        turn_every: float = TURN_EVERY_SECONDS,
    ) -> None:
        super().__init__()
        #: how long the turns' deferred callbacks run at most between two looks at the
        #: sockets (``EVE_REQUEST_SLICE_MS``)
        self.slice_seconds = slice_seconds
        #: the request sockets, asked between two slices; None: a turn of the loop after
        #: every slice
        self.watch = watch
        self.turn_every = turn_every
        #: whether the turns' callbacks still run in slices (``stop_slicing``)
        self.slicing = True
        self._deferred: deque[asyncio.Handle] = deque()
        self._draining = False
        #: a request's callbacks scheduled while the turns' work waits: they run before
        #: its next slice
        self._urgent: deque[asyncio.Handle] = deque()
        #: a request's calls running in threads, whose results the loop must not hold
        self._requests_in_threads = 0
        #: checks run between two slices (``poll_between_slices``)
        self._polls: dict[object, Callable[[], object]] = {}
        #: callbacks deferred, slices run, and turns of uvloop's loop taken between slices
        #: (for tests and the benchmark)
        self.deferred = 0
        self.slices = 0
        self.turns = 0

    def call_soon(
        self,
        callback: Callable[[Unpack[_Ts]], object],
        *args: *_Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        if not self.slicing and not self._draining:  # the deferred ones ran: in order
            plain: asyncio.Handle = super().call_soon(callback, *args, context=context)
            return plain
        serving = SERVING.get() if context is None else context.get(SERVING)
        if serving is not None and serving.urgent:
            if not self._draining:  # no turns' work waits: uvloop's queue runs it next
                handle: asyncio.Handle = super().call_soon(callback, *args, context=context)
                return handle
            # ``_run_slice`` is due: it runs a request's callbacks before its next slice
            urgent = asyncio.Handle(callback, args, self, context)
            self._urgent.append(urgent)
            return urgent
        deferred = asyncio.Handle(callback, args, self, context)
        self._deferred.append(deferred)
        self.deferred += 1
        if not self._draining:
            self._draining = True
            super().call_soon(self._run_slice)
        return deferred

    # uvloop's stub says a coroutine; it returns asyncio's future, as asyncio's loop does
    def run_in_executor(  # type: ignore[override]
        self, executor: Executor | None, func: Callable[..., T], *args: Any
    ) -> asyncio.Future[T]:
        future = cast("asyncio.Future[T]", super().run_in_executor(executor, func, *args))
        serving = SERVING.get()
        if serving is not None and serving.urgent:
            # its result comes back through uvloop's own queue, which only a turn of the
            # loop runs: while it is out, the loop takes one after every slice
            self._requests_in_threads += 1
            future.add_done_callback(self._request_thread_done)
        return future

    def poll_between_slices(self, check: Callable[[], object]) -> Callable[[], None]:
        """Call ``check`` between every two slices, with the interpreter's lock held, until
        the call returned is made. A request waiting for an answer on a socket (a message's
        claim on PostgreSQL: ``pg_claim_now.py``) reads it there: a turn of uvloop's loop
        for it would let the lock go and wait to have it back behind the worker's threads
        (``request_sockets.py``). A check must not block; its error goes to the loop's
        exception handler."""
        key = object()
        self._polls[key] = check

        def stop() -> None:
            self._polls.pop(key, None)

        return stop

    def between_slices(self) -> asyncio.Future[None] | None:
        """A future done at the loop's next pause between two slices of the turns' work, or
        None when none runs now (no turns' work waits): a request that must try again
        (``sessions.claim_now.LoopClaims.claim_soon``) tries once a slice, not at once,
        and without a turn of uvloop's loop."""
        if not self._draining:
            return None
        paused: asyncio.Future[None] = self.create_future()

        def pause() -> None:
            stop()
            if not paused.done():
                paused.set_result(None)

        stop = self.poll_between_slices(pause)
        return paused

    @property
    def pausing(self) -> bool:
        """Whether a pause between two slices comes (the turns' work waits), where a check
        of ``poll_between_slices`` is called next; False: none may come for a while."""
        return self._draining

    def stop_slicing(self) -> None:
        """Run every callback as uvloop's own loop does from now on (once those deferred
        until now have run, in order): a worker on PostgreSQL unless told
        (``slices.slices_for_backend``)."""
        self.slicing = False
        self.requests_first = False

    def _request_thread_done(self, _future: asyncio.Future[Any]) -> None:
        self._requests_in_threads -= 1

    def add_reader(
        self, fd: FileDescriptorLike, callback: Callable[[Unpack[_Ts]], object], *args: *_Ts
    ) -> None:
        # a listening socket (``acceptor.py``): a connection waiting there is a request
        super().add_reader(fd, callback, *args)
        self.watch_socket(fd if isinstance(fd, int) else fd.fileno())

    def watch_socket(self, fd: int) -> None:
        """Look at ``fd`` between two slices: bytes waiting there are a request's."""
        if self.watch is not None:
            self.watch.watch(fd)

    def _run_slice(self) -> None:
        deferred, urgent = self._deferred, self._urgent
        now = time.perf_counter()
        turn_at = now + self.turn_every
        first = True
        while True:
            if self._polls:
                self._poll()
            while urgent:
                _run(urgent.popleft())
            if not deferred:
                self._draining = False
                if self._polls:  # no pause between slices comes now: what waits for one
                    self._poll()  # is called (its callbacks go to uvloop's queue)
                return
            if not first and self._turn_due(now, turn_at):
                break
            first = False
            self.slices += 1
            until = now + self.slice_seconds
            while deferred:
                _run(deferred.popleft())
                now = time.perf_counter()
                if now >= until:
                    break
        self.turns += 1
        super().call_soon(self._run_slice)  # after the loop has looked at its sockets

    def _poll(self) -> None:
        for check in list(self._polls.values()):
            try:
                check()
            except Exception as error:  # as a callback's error is reported
                self.call_exception_handler(
                    {"message": "a check between slices failed", "exception": error}
                )

    def _turn_due(self, now: float, turn_at: float) -> bool:
        """Whether the loop must take a turn before the next slice."""
        if self._requests_in_threads or now >= turn_at:
            return True
        return self.watch is None or self.watch.any_readable()

    def close(self) -> None:
        super().close()
        if self.watch is not None:
            self.watch.close()


def _run(handle: asyncio.Handle) -> None:
    if not handle.cancelled():
        handle._run()


def new_serving_loop(slice_seconds: float = DEFAULT_SLICE_MS / 1000) -> asyncio.AbstractEventLoop:
    loop: asyncio.AbstractEventLoop = ServingLoop(slice_seconds, watch=epoll_watch())
    return loop
