"""One thread for the turns' writes to the store on SQLite.

SQLite has one writer at a time, so the store's writes ran one at a time anyway, each in a
thread of its own that waited at the gate (``sqlite_gate.py``): at 1,000 live sessions a
worker ran 1,400 threads, most of them asleep there, and every hand-over woke one that then
waited for the interpreter's lock behind the event loop. Here a write waits for its turn as
an item in a queue, holding no thread, and one thread runs the queue: from one commit to
the next it keeps running, with no thread to wake between them.

The thread still takes the gate for each transaction, so a request's write (on the
requests' threads) goes first, and a write made in any other thread queues there too. A
write that waits out a fault (``db_retry.py``) holds the lane meanwhile: the writes behind
it wait for the same file, and a request's never queues here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


def _named(name: str) -> None:
    threading.current_thread().name = name


class WriterLane(ThreadPoolExecutor):
    """The standard library's one-thread executor, its thread named ``name``, counting the
    writes it ran."""

    def __init__(self, name: str = "eve-writer") -> None:
        super().__init__(max_workers=1, initializer=_named, initargs=(name,))
        #: writes run (for tests and the benchmark)
        self.ran = 0

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        return super().submit(self._counted, fn, *args, **kwargs)

    def _counted(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        self.ran += 1
        return fn(*args, **kwargs)
