"""A message's claim run on the event loop's thread, when eve's SQLite file is free at once.

A message is answered once its turn is claimed durably (``accepted.py``). Run in a thread,
the claim cost a loaded worker several turns of its event loop: the request's task handed
the claim to a thread and slept; the thread waited for the interpreter's lock; its result
came back as a callback queued behind every ready one, which woke the task, queued behind
them again. At 1,000 live sessions on SQLite a turn of the loop took tens of milliseconds,
so a ``POST`` waited four of them where ``/health`` waited two (p95 145 ms against 60).
The claim itself is a few statements on a file in the page cache: a fraction of a
millisecond of the loop's time, so the loop runs it itself, in the request's first step,
and the answer leaves in that step.

The loop's thread must not wait long, so it claims only when the file is had at once or
nearly: another thread of this process holding it is waited for ``LOOP_PATIENCE_SECONDS``
at most on a loop that runs requests first (``patience_on``), not at all on another, as a
request waits, first in line (``sqlite_gate.SqliteGate.held_within``), and another process
not at all (``BEGIN IMMEDIATE`` tried once, on a connection of its own
whose busy handler is off). Otherwise, or if the file faults (full, read-only, gone), it
says ``NOT_NOW`` and the claim runs in a request's thread as before, which waits its turn
at the gate and meets the fault as it always did (nothing of the attempt was committed).
That connection also never checkpoints the write-ahead log (``wal_autocheckpoint=0``): a
checkpoint copies pages and syncs the file, milliseconds the loop must not spend; the
other connections checkpoint as before. PostgreSQL has no such claim: its statements are
round trips, which the loop would wait for.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from enum import Enum
from typing import Literal, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.group_commit import SharedTransaction, joining
from eve.sessions.loop_connection import LoopConnection
from eve.sessions.sqlite_gate import claims_first
from eve.sessions.store import SessionStore

T = TypeVar("T")

#: how long the loop's thread waits for another thread of its process to let the file go,
#: first in line (a group of the turns' writes commits early for it): about the write that
#: holds it. The loop waits with the interpreter's lock let go, so that write runs. At
#: 1,000 sessions on SQLite 24% of the messages found the file free at once; with this
#: wait 97-98%, each waiting 6 ms at most (p95); left to a thread, a claim waited behind
#: the turns' writes and the interpreter's lock for up to 230 ms (p95)
LOOP_PATIENCE_SECONDS = 0.005
#: how long a claim the file was not free for tries again on the loop, once a slice of the
#: turns' work, before it goes to a request's thread (``LoopClaims.claim_soon``): at two
#: workers and 1,000 sessions 42 % of the claims found the other worker holding the file,
#: and went to a thread, whose result came back through a turn of the loop
RETRY_SECONDS = 0.025


class NotNow(Enum):
    """The file was not free at once: claim in a thread instead."""

    NOT_NOW = "not now"


NOT_NOW = NotNow.NOT_NOW


@dataclass(kw_only=True)
class ClaimTiming:
    """Where a request's claim ran and how long the request waited for it (the server's
    ``Server-Timing`` header says so: ``server_timing.py``)."""

    where: Literal["loop", "thread"] | None = None
    seconds: float = 0.0
    #: when its first try began (``time.perf_counter``), if one on the loop came first: a
    #: claim it left to a thread took from then (``pg_claim_now.py``)
    began: float | None = None


#: the request's ``ClaimTiming``, set by the server around a request it times
CLAIM_TIMING: ContextVar[ClaimTiming | None] = ContextVar("eve_claim_timing", default=None)


def note_claim(where: Literal["loop", "thread"], since: float) -> None:
    """Tell the request being timed (if one is) that its claim ran ``where``, from
    ``since`` (``time.perf_counter``) until now."""
    timing = CLAIM_TIMING.get()
    if timing is not None:
        began = since if timing.began is None else min(timing.began, since)
        timing.where, timing.seconds = where, time.perf_counter() - began


def claim_begins() -> float:
    """Now (``time.perf_counter``), noted as when the request being timed began its claim:
    a try on the loop that leaves the claim to a thread (``NOT_NOW``) is part of its time."""
    now = time.perf_counter()
    timing = CLAIM_TIMING.get()
    if timing is not None and timing.began is None:
        timing.began = now
    return now


def patience_on(loop: asyncio.AbstractEventLoop) -> float:
    """How long a claim on ``loop``'s thread waits for the gate: ``LOOP_PATIENCE_SECONDS`` on
    a loop that runs requests first (``eve/server/serving_loop.py``), where a claim left to
    a thread is what a POST's answer would wait for; none on another, where the loop's
    turns are what everything waits for."""
    return LOOP_PATIENCE_SECONDS if getattr(loop, "requests_first", False) else 0.0


class LoopClaims:
    """Claims on the loop's thread for one store; ``claim`` is called on that thread only."""

    def __init__(
        self,
        store: SessionStore,
        *,
        patience: float = LOOP_PATIENCE_SECONDS,
        retry: float = RETRY_SECONDS,
    ) -> None:
        self.store = store
        self.patience = patience
        #: how long ``claim_soon`` tries again, in seconds
        self.retry = retry
        #: claims made on the loop, tries that left them to a thread (or to another try:
        #: ``retried``), for tests and the log
        self.on_loop = 0
        self.not_now = 0
        self.retried = 0
        self._own = LoopConnection(store.engine)
        self._thread: int | None = None

    def claim(
        self,
        session_id: str,
        then: Callable[[Connection, int], T],
        *,
        patience: float | None = None,
    ) -> T | NotNow | None:
        """``store.claim_turn(session_id, then)`` at once, or ``NOT_NOW``; ``patience``: the
        seconds it may wait for another thread to let the file go (the store's own unless
        given). What ``then`` raises is raised (nothing of it committed), as from the claim
        in a thread."""
        gate = self.store.gate
        if gate is None or not self._may_claim():
            return NOT_NOW
        waits = self.patience if patience is None else patience
        with gate.held_within(waits) as free:
            found = self._claim(session_id, then) if free else NOT_NOW
        if found is NOT_NOW:
            self.not_now += 1
        else:
            self.on_loop += 1
        return found

    async def claim_soon(
        self,
        session_id: str,
        then: Callable[[Connection, int], T],
        *,
        patience: float | None = None,
        within: float | None = None,
    ) -> T | NotNow | None:
        """``claim``, tried again once a slice of the turns' work for ``within`` seconds
        (its ``retry`` unless given) while it says ``NOT_NOW``, on a loop that runs requests
        first (another process holds the file for a write or a group of them,
        milliseconds); ``NOT_NOW`` once that is past, or at once on another loop."""
        if not self._may_claim():  # PostgreSQL's, or a closed store's: no try could be
            return NOT_NOW
        found = self.claim(session_id, then, patience=patience)
        if not isinstance(found, NotNow):
            return found
        # the file was not free: every process's background writes let it go first
        # (``sqlite_requests.py``) while this claim tries again
        with self.marked():
            return await self._again(session_id, then, patience=patience, within=within)

    async def _again(
        self,
        session_id: str,
        then: Callable[[Connection, int], T],
        *,
        patience: float | None,
        within: float | None,
    ) -> T | NotNow | None:
        loop = asyncio.get_running_loop()
        until = time.perf_counter() + (self.retry if within is None else within)
        found: T | NotNow | None = NOT_NOW
        while time.perf_counter() < until:
            between_slices = getattr(loop, "between_slices", None)
            paused = between_slices() if between_slices is not None else None
            if paused is None:
                return found
            self.retried += 1
            await paused
            found = self.claim(session_id, then, patience=patience)
            if not isinstance(found, NotNow):
                return found
        return found

    @contextlib.contextmanager
    def marked(self) -> Iterator[None]:
        """A claim of this process waits for eve's file for the block: it goes first at
        this process's gate (``sqlite_gate.claims_first``), and the background writes of
        every process on the file let the file go first (``sqlite_requests.py``)."""
        gate = self.store.gate
        signal = None if gate is None else gate.signal
        with claims_first(), contextlib.nullcontext() if signal is None else signal.marked():
            yield

    def _may_claim(self) -> bool:
        """Whether a claim here could be made: on SQLite, an open store, its own thread."""
        return self.store.gate is not None and not self.store.closed and self._same_thread()

    def _same_thread(self) -> bool:
        # its connection belongs to the thread that opened it: a call from another (none in
        # a worker; a test's own thread) claims in a thread as before
        me = threading.get_ident()
        if self._thread is None:
            self._thread = me
        return self._thread == me

    def _claim(self, session_id: str, then: Callable[[Connection, int], T]) -> T | NotNow | None:
        try:
            connection = self._own.connect()
            shared = SharedTransaction(self.store.engine, connection)
            root = connection.begin()
        except (sa.exc.SQLAlchemyError, sqlite3.Error):
            self._own.drop()
            return NOT_NOW
        try:
            shared.begin(patience=0.0)  # tried once: another process holds the file
            with joining(shared):
                found = self.store.claim_turn(session_id, then)
            root.commit()
        except (sa.exc.SQLAlchemyError, sqlite3.Error):
            # busy, or a fault: nothing is committed, and the thread's claim meets it
            self._own.undo(root)
            return NOT_NOW
        except BaseException:
            self._own.undo(root)
            raise
        return found

    def close(self) -> None:
        """Give its connection up (never back to the pool: its busy handler is off)."""
        self._own.drop()
