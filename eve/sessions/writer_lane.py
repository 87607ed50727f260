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
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class WriterLane:
    def __init__(self, name: str = "eve-writer") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue: deque[tuple[Future[Any], Callable[[], Any]]] = deque()
        self._thread: threading.Thread | None = None
        self._closed = False
        #: writes run (for tests and the benchmark)
        self.ran = 0

    def submit(self, work: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                # what a ThreadPoolExecutor says, which DBOS's log recognises (dbos_data.py)
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._queue.append((future, work))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._wake.notify()
        return future

    def shutdown(self, *, wait: bool = True, cancel_futures: bool = False) -> None:
        """No more writes; those queued still run (unless ``cancel_futures``)."""
        with self._lock:
            self._closed = True
            if cancel_futures:
                for future, _ in self._queue:
                    future.cancel()
                self._queue.clear()
            self._wake.notify()
            thread = self._thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not (self._queue or self._closed):
                    self._wake.wait()
                if not self._queue:
                    return  # closed, and nothing left
                future, work = self._queue.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            self.ran += 1
            try:
                result = work()
            except BaseException as error:  # the caller's to raise, as an executor's is
                future.set_exception(error)
            else:
                future.set_result(result)
