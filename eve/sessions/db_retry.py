"""Outside a request, a call to eve's tables waits out a database that went away.

A workflow body, the event writer and the sweeps must not lose what they were doing because
PostgreSQL restarted, a connection was killed or a SQLite lock was held a while: they retry
the whole call (each store method is one transaction, so a failed try left nothing behind)
with a backoff. A workflow body waits for as long as it takes (``patient``), as DBOS does for
its own tables: a turn that gave up would free its session's place in the queue for the
next turn, and could then only fail, since running it after that one would break the order
(``accepted_sweep.py``). Other callers (the sweeps, the heartbeat, a follower's reads) give
up after ``SessionStore.retry_seconds``; a request does not wait at all: its caller gets a
503 at once and may retry (``fail_fast``). A closed store stops every wait. The event
notifier (``pg_notifier.py``) waits out its flushes here too, until its store closes.

The log says once that the database is out of reach and once that it is back, however many
calls waited meanwhile.

A write run in a group's shared transaction (``group_commit.py``) is tried once: the group
breaks on the fault and every write of it runs again alone, and waits it out there.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar, cast

from eve.sessions.database_errors import failing_fast, failure_kind, raised, transient

log = logging.getLogger("eve.sessions")

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
FIRST_DELAY = 0.05
MAX_DELAY = 2.0


class _Retrying(Protocol):
    retry_seconds: float
    #: set by ``close``: a call still waiting gives up, so a shutdown never waits on it
    closed: bool


class _Outage:
    """Whether the database is known to be out of reach, so each change is logged once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down = False

    def began(self, error: BaseException) -> None:
        with self._lock:
            if self._down:
                return
            self._down = True
        log.warning(
            "the session database is out of reach (%s); waiting for it", failure_kind(error)
        )

    @property
    def down(self) -> bool:
        return self._down

    def ended(self) -> None:
        with self._lock:
            if not self._down:
                return
            self._down = False
        log.warning("the session database is reachable again")


_outage = _Outage()
_PATIENT: ContextVar[bool] = ContextVar("eve_patient", default=False)
#: per thread, not per context: a group runs each write in its caller's context
_ONCE = threading.local()


def patient() -> contextlib.AbstractContextManager[None]:
    """Around a workflow body: its calls wait out a transient fault with no deadline."""
    return raised(_PATIENT)


def waits_out(error: BaseException) -> bool:
    """Whether the caller (a workflow body) should try again after ``error``."""
    return _PATIENT.get() and transient(error)


@contextlib.contextmanager
def tried_once() -> Iterator[None]:
    """Around the writes of a shared transaction, in its thread: a fault is not waited out."""
    _ONCE.on = True
    try:
        yield
    finally:
        _ONCE.on = False


def retried(method: F) -> F:
    """``method`` of a store, tried again while its failure is ``transient``."""

    @functools.wraps(method)
    def call(self: _Retrying, *args: Any, **kwargs: Any) -> Any:
        if failing_fast() or getattr(_ONCE, "on", False):
            return method(self, *args, **kwargs)
        deadline = math.inf if _PATIENT.get() else time.monotonic() + self.retry_seconds
        return waited_out(
            functools.partial(method, self, *args, **kwargs),
            deadline=deadline,
            stopped=lambda: self.closed,
        )

    return cast(F, call)


def waited_out(call: Callable[[], T], *, deadline: float, stopped: Callable[[], bool]) -> T:
    """``call()``, made again after each ``transient`` failure, waiting longer each time,
    until it succeeds; its failure when it is not transient, when ``stopped()`` says to
    give up, or when the next wait would pass ``deadline`` (``time.monotonic``)."""
    delay = FIRST_DELAY
    waited = False
    while True:
        try:
            result = call()
        except Exception as error:
            if stopped() or not transient(error) or time.monotonic() + delay > deadline:
                raise
            _outage.began(error)
            waited = True
            time.sleep(delay)
            delay = min(delay * 2, MAX_DELAY)
            continue
        # any call that works ends a known outage, not only one that waited: after a call
        # gave up waiting, the outage stayed "known" and the next one was never logged
        if waited or _outage.down:
            _outage.ended()
        return result
