"""``in_thread``: ``asyncio.to_thread`` for eve's own calls of the turns, lighter on the loop.

A worker on SQLite at 1,000 live sessions is bound by the interpreter's lock, and its loop
handed about ten calls a turn to a thread through ``to_thread`` (``thread_lanes.py``): the
event log's appends, a body's progress, the store's other calls. Each went through the
loop's executor (``submit``'s ``Future``, ``wrap_future``'s chaining); here the call goes
straight to its lane with the caller's asyncio future, which the lane's thread settles
through the loop, several answers a wake-up (``loop_replies.py``). The lane is the one
``submit`` would have chosen, with its bound; the call runs in a copy of the caller's context,
as ``to_thread`` runs it; a request's call, or one on a loop no lanes serve (a test's, a
command's), goes through ``to_thread`` as before.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from eve.sessions.loop_replies import LoopReply
from eve.sessions.thread_lanes import for_a_request, served

P = ParamSpec("P")
T = TypeVar("T")


async def in_thread(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` in a thread of its lane, as ``asyncio.to_thread`` runs it."""
    loop = asyncio.get_running_loop()
    lanes = served(loop)
    if lanes is None or lanes.answers is None or for_a_request():
        # (a request's call: the serving loop counts what a request has out in a thread)
        return await asyncio.to_thread(fn, *args, **kwargs)
    future: asyncio.Future[T] = loop.create_future()
    run = contextvars.copy_context().run
    lanes.answer(LoopReply(future, lanes.answers), fn, functools.partial(run, fn, *args, **kwargs))
    return await future
