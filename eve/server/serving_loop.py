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
callback that does not serve a request waits in a queue of its own, run for at most a
slice (``EVE_REQUEST_SLICE_MS``: ``slices.py``) at each turn of the loop; what
serves a request (its task's steps, the futures it waits on) goes straight to the loop's
ready queue, and the loop looks at its sockets after every slice. So a request waits for
at most a slice before its bytes are read, and one more before its task runs, whatever
the load. What serves a request is told by its context: the task uvicorn starts for a
request runs in a context marked as serving (``serving.py``), until its answer is
complete; a task it starts (the turn a message starts) inherits the mark, and loses it
with the answer. Callbacks of uvloop's own (a socket's data, a timer, a thread's result)
run as they always did.

The slices are not shorter because each look at the sockets lets the interpreter's lock
go, and the loop waits to have it back behind the worker's threads; ``EVE_REQUEST_SLICE_MS``
trades one for the other (``docs/sessions.md``, *Back-pressure*).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVarTuple, Unpack

import uvloop

from eve.server.serving import SERVING
from eve.server.slices import DEFAULT_SLICE_MS

_Ts = TypeVarTuple("_Ts")


class ServingLoop(uvloop.Loop):
    """uvloop's loop, deferring the callbacks that serve no request to slices."""

    #: it answers a request within about two slices, so a request may wait a little on its
    #: thread (``sessions.claim_now.patience_on``)
    requests_first = True

    def __init__(self, slice_seconds: float = DEFAULT_SLICE_MS / 1000) -> None:
        super().__init__()
        #: how long the turns' deferred callbacks run at most between two looks at the
        #: sockets (``EVE_REQUEST_SLICE_MS``)
        self.slice_seconds = slice_seconds
        self._deferred: deque[asyncio.Handle] = deque()
        self._draining = False
        #: callbacks deferred, and slices run (for tests and the benchmark)
        self.deferred = 0
        self.slices = 0

    def call_soon(
        self,
        callback: Callable[[Unpack[_Ts]], object],
        *args: *_Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        serving = SERVING.get() if context is None else context.get(SERVING)
        if serving is not None and serving.urgent:
            handle: asyncio.Handle = super().call_soon(callback, *args, context=context)
            return handle
        deferred = asyncio.Handle(callback, args, self, context)
        self._deferred.append(deferred)
        self.deferred += 1
        if not self._draining:
            self._draining = True
            super().call_soon(self._run_slice)
        return deferred

    def _run_slice(self) -> None:
        self.slices += 1
        deferred = self._deferred
        until = time.perf_counter() + self.slice_seconds
        while deferred:
            handle = deferred.popleft()
            if not handle.cancelled():
                handle._run()
            if time.perf_counter() >= until:
                break
        if deferred:
            super().call_soon(self._run_slice)  # after the loop has looked at its sockets
        else:
            self._draining = False


def new_serving_loop(slice_seconds: float = DEFAULT_SLICE_MS / 1000) -> asyncio.AbstractEventLoop:
    loop: asyncio.AbstractEventLoop = ServingLoop(slice_seconds)
    return loop
