"""On PostgreSQL, a worker's calls of eve's tables run on its event loop, not in threads:
psycopg's async connections, the store's methods unchanged (SQLAlchemy's asyncio, a
greenlet per call).

A call in a thread was a hand-off: the loop handed it to a thread of the pool lane, the
thread took the interpreter's lock, and took it back after each round trip to the server,
then handed the result back to the loop, which took the lock back in turn. At 1,000 live
sessions a dozen such threads and the loop took turns at the lock, a pass of the loop took
40 to 100 ms while PostgreSQL sat idle, and a POST waited for it (docs/postgres.md, *A
worker at 1,000 live sessions*). Here the store's method runs in a greenlet on the loop's
thread: where it would wait for the server, the greenlet gives the loop back, and the loop
goes on with other work until the socket is readable. No thread, no lock changing hands.

The method is the one a thread ran (``store.py``): the store picks this module's engines
when it runs in such a greenlet (``LoopEngines.here``). A call made from a thread (a sweep,
the CLI, a sync tool) still runs there, on the store's threaded engines. The engines
belong to the loop that made them (their connections and pool wait on that loop), and go
with it: ``close`` on that loop, or ``drop`` from anywhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.util.concurrency import greenlet_spawn, in_greenlet

from eve.sessions.pg_pools import BACKGROUND_POOL, REQUEST_POOL, prepared

T = TypeVar("T")


class LoopEngines:
    """The store's two pools (``pg_pools.py``), as connections of one event loop."""

    def __init__(self, url: sa.URL, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._background = _async_engine(url, pool_size=BACKGROUND_POOL)
        self._requests = _async_engine(url, pool_size=REQUEST_POOL)
        #: the calls running: a task the loop holds only weakly could be collected mid-call
        self._running: set[asyncio.Task[None]] = set()

    @staticmethod
    def here() -> bool:
        """Whether the caller runs on the loop, in a call ``run`` started (its statements
        then go through ``engine``)."""
        return in_greenlet()

    def engine(self, *, urgent: bool) -> Engine:
        """The engine of a call on the loop: the requests' pool while one is answered."""
        chosen = self._requests if urgent else self._background
        return chosen.sync_engine

    def run(self, call: Callable[[], T]) -> Future[T]:
        """``call()`` on the loop, in a greenlet; its result as a thread's would be given (a
        ``run_in_executor`` caller gets it the same way). Called on the loop's thread.

        Like a thread's, the call runs to its end once started: a caller that stops waiting
        (cancelled) does not cut a transaction in half."""
        done: Future[T] = Future()
        task = self.loop.create_task(self._run(call, done))
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return done

    async def _run(self, call: Callable[[], T], done: Future[T]) -> None:
        if not done.set_running_or_notify_cancel():
            return
        try:
            result = await greenlet_spawn(call)
        except BaseException as error:  # the caller's to raise, as a thread would hand it
            done.set_exception(error)
            return
        done.set_result(result)

    async def close(self) -> None:
        """Close the connections, on their loop, once the calls running have ended."""
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)
        await self._background.dispose()
        await self._requests.dispose()

    def drop(self) -> None:
        """Forget the connections without closing them (off their loop, or with it gone):
        their sockets close as they are collected."""
        self._background.sync_engine.dispose(close=False)
        self._requests.sync_engine.dispose(close=False)


def _async_engine(url: sa.URL, *, pool_size: int) -> AsyncEngine:
    # psycopg's async connections whatever the URL named (``pg_pools`` needs psycopg 3)
    url = url.set(drivername="postgresql+psycopg")
    engine = create_async_engine(url, pool_size=pool_size, max_overflow=0)
    prepared(engine.sync_engine)
    return engine


def lane_of(engines: LoopEngines | None) -> Callable[[Callable[[], Any]], Future[Any]] | None:
    """``engines.run`` when ``engines`` belong to the running loop, else None (the caller
    runs the call in a thread)."""
    if engines is None:
        return None
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return engines.run if running is engines.loop else None
