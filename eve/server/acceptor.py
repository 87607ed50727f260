"""Accepting a worker's connections in batches, rather than one per turn of the event loop.

libuv (under uvloop) accepts one connection each time the loop polls (libuv 1.45 stopped
accepting in a loop), and a busy worker's loop turns slowly: at 1,000 live sessions on
PostgreSQL a turn of the loop took 40 to 100 ms, running the turns' callbacks, so the
worker accepted 10 to 25 connections a second. When the benchmark's 1,000 clients opened
their event streams over 6 s, 850 waited in the kernel's accept queue and drained for
30 s, and a ``/health`` check on a new connection took 13 to 35 s to be answered
(``strace`` of the loop's thread: one ``accept4`` after each ``epoll_pwait``).

So the worker accepts by itself: when the listening socket is readable it accepts every
waiting connection, up to ``BATCH``, and hands each to the loop as uvloop's own server
would (``connect_accepted_socket``, with uvicorn's protocol). asyncio's own loop (where
uvloop is not installed) accepts up to the backlog at once: there uvicorn's server stays
(``accepts_one_per_turn``).

A connection is a request on its way (the benchmark's clients, as many do, send each
``POST`` on a connection of its own), so on a loop that runs requests first
(``serving_loop.py``) its hand-over runs before the turns' work, not behind it, and its
socket is looked at between two slices from the moment it is accepted; and the listening
socket is tried between two slices too, so a connection waits no turn of uvloop's loop to
be accepted (``docs/sessions.md``, *Back-pressure*). Tried there only when an epoll set of
its own says a connection waits (``request_sockets.py``, 1.5 us a look with the lock held):
a failed accept on the idle socket raised and caught costs 5.6 to 10 us, and the loop
pauses between slices thousands of times a second (4.8 % of a busy worker's samples).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import Callable

from eve.server.request_sockets import EpollWatch, epoll_watch
from eve.server.serving import answered, serving_context

#: connections accepted at most per readiness of the listening socket: each costs the loop
#: tens of microseconds, so a full batch is a few milliseconds of a turn of the loop that,
#: under load, lasts tens of them; the rest wait for the next turn
BATCH = 128
#: seconds the acceptor pauses when the process is out of descriptors or memory (as
#: asyncio's own server does): accepting again at once would fail again at once
RESOURCE_PAUSE_SECONDS = 1.0
#: accept() failing for want of descriptors or memory: the connection stays queued
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})

logger = logging.getLogger("eve.server")


class Acceptor:
    """Accepts on ``sock`` for ``loop`` until ``close()``; each connection gets a protocol
    from ``protocol_factory``."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.Protocol],
        *,
        batch: int = BATCH,
    ) -> None:
        self._loop = loop
        self._sock = sock
        self._protocol_factory = protocol_factory
        self._batch = batch
        #: connections being handed to the loop (a task holds only a weak reference)
        self._handing: set[asyncio.Task[None]] = set()
        self._paused: asyncio.TimerHandle | None = None
        self._closed = False
        self._stop_polling: Callable[[], None] | None = None
        #: the listening socket alone, looked at between two slices before an accept is
        #: tried; None (not Linux): tried each time
        self._waiting: EpollWatch | None = None
        sock.setblocking(False)  # every worker shares the socket, and each accepts this way
        self._listen()

    def _listen(self) -> None:
        self._loop.add_reader(self._sock.fileno(), self.accept_ready)
        # and between two slices of the turns' work, on a loop that runs requests first:
        # a connection accepted there waits no turn of uvloop's loop to be accepted
        poll = getattr(self._loop, "poll_between_slices", None)
        if poll is not None:
            if self._waiting is None:
                self._waiting = epoll_watch()
                if self._waiting is not None:
                    self._waiting.watch(self._sock.fileno())
            self._stop_polling = poll(self._accept_if_waiting)

    def _unlisten(self) -> None:
        self._loop.remove_reader(self._sock.fileno())
        if self._stop_polling is not None:
            self._stop_polling()
            self._stop_polling = None

    def _accept_if_waiting(self) -> None:
        if self._waiting is None or self._waiting.any_readable():
            self.accept_ready()

    def accept_ready(self) -> int:
        """Accept the waiting connections, up to the batch; how many were accepted."""
        accepted = 0
        while accepted < self._batch:
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                break  # none left (or another worker took it)
            except ConnectionAbortedError:
                continue  # the client gave up while it waited
            except OSError as error:
                if error.errno not in _OUT_OF_RESOURCES:
                    raise
                logger.warning(
                    "cannot accept connections for now (%s); trying again in %g s",
                    error.strerror,
                    RESOURCE_PAUSE_SECONDS,
                )
                self._pause()
                break
            accepted += 1
            self._hand(conn)
        return accepted

    def _hand(self, conn: socket.socket) -> None:
        conn.setblocking(False)
        # a connection is a request on its way: handed over before the turns' work (on a
        # loop that runs requests first), and its bytes looked for between two slices
        # from now, not once uvloop's loop has made it a transport
        watch_socket = getattr(self._loop, "watch_socket", None)
        if watch_socket is not None:
            watch_socket(conn.fileno())
        task = self._loop.create_task(self._connect(conn), context=serving_context())
        self._handing.add(task)
        task.add_done_callback(self._handing.discard)

    async def _connect(self, conn: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(self._protocol_factory, conn)
        except OSError:
            conn.close()  # reset before the loop took it: nothing to answer
        finally:
            # the connection's own callbacks run in this context (uvloop's transport keeps
            # it): from now they are not a request's, as before; its requests are marked
            # each in a context of its own (``serving.serving_protocol``)
            answered()

    def _pause(self) -> None:
        self._unlisten()
        self._paused = self._loop.call_later(RESOURCE_PAUSE_SECONDS, self._resume)

    def _resume(self) -> None:
        self._paused = None
        if not self._closed:
            self._listen()

    def close(self) -> None:
        """Stop accepting (before the socket is closed); connections already handed stay."""
        if self._closed:
            return
        self._closed = True
        if self._paused is not None:
            self._paused.cancel()
        else:
            self._unlisten()
        if self._waiting is not None:
            self._waiting.close()


def accepts_one_per_turn(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop``'s own servers accept one connection per turn of the loop: uvloop's
    do; asyncio's accept up to the backlog at once (and its loop on Windows, the proactor,
    has no ``add_reader`` for an ``Acceptor``)."""
    # (a subclass of uvloop's loop too: ``serving_loop.ServingLoop``)
    return any(kind.__module__.startswith("uvloop") for kind in type(loop).__mro__)
