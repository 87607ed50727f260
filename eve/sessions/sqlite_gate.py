"""One transaction at a time on eve's SQLite file within a process, a request's first.

SQLite has one writer at a time, and a connection that finds the file locked sleeps in its
busy handler (1 ms, then longer, up to 100 ms a try) and tries again: the lock goes to
whoever happens to try when it is free, not to whoever waited longest. Under load (hundreds
of sessions whose writers commit every few milliseconds) that convoy held every pooled
connection asleep, and a request waited behind it for a connection, then for the lock: at
500 concurrent sessions the first ``POST /session`` of a client waited 20 to 60 s.

So this process's transactions on the file queue here instead, before they take a pooled
connection: each waits on a condition (woken when the file is free, no sleeping), and a
request's transaction (``fail_fast``: an HTTP request is being answered) goes before the
background ones (turns' events, sweeps, heartbeats) waiting with it. Reads queue too: they
cost a fraction of a millisecond and the interpreter runs one thread at a time anyway. A
thread already holding the gate passes through again (a transaction's callback may call
the store). PostgreSQL needs none of this: it locks rows, not the database.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from eve.sessions.database_errors import failing_fast


class SqliteGate:
    def __init__(self) -> None:
        lock = threading.Lock()
        self._urgent = threading.Condition(lock)
        self._background = threading.Condition(lock)
        self._holder: int | None = None
        self._depth = 0
        self._urgent_waiting = 0
        #: transactions that had to wait for another (for tests and the benchmark)
        self.waited = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        """The file to this thread for the block; a request's transaction first."""
        self._acquire(urgent=failing_fast())
        try:
            yield
        finally:
            self._release()

    def _acquire(self, *, urgent: bool) -> None:
        me = threading.get_ident()
        with self._urgent:
            if self._holder == me:
                self._depth += 1
                return
            if urgent:
                self._urgent_waiting += 1
                try:
                    while self._holder is not None:
                        self.waited += 1
                        self._urgent.wait()
                finally:
                    self._urgent_waiting -= 1
            else:
                while self._holder is not None or self._urgent_waiting:
                    self.waited += 1
                    self._background.wait()
            self._holder, self._depth = me, 1

    def _release(self) -> None:
        with self._urgent:
            self._depth -= 1
            if self._depth:
                return
            self._holder = None
            # one waiter, a request's if any: waking every waiter would make each of
            # hundreds of threads look and sleep again at every commit
            if self._urgent_waiting:
                self._urgent.notify()
            else:
                self._background.notify()
