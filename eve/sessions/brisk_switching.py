"""A short thread switch interval while the writer lane holds eve's SQLite file for a group of
the turns' writes.

The driver lets go of the interpreter's lock around each statement, and the lane's thread
then waits to have it back behind whichever thread took it meanwhile (at a loaded worker,
the event loop computing), up to the switch interval a statement (1 ms:
``eve/server/switching.py``), all the while holding the file. With two workers on one file
the other worker's writes and claims wait for those holds: at ``sqlite-2w-1000`` each
worker's lane was busy 83 to 89 % of the time and did its own work a third of it, the rest
waiting for its gate, for claims and for the other worker's holds (``docs/sessions.md``,
*Two SQLite workers: where the time goes*). So while a group holds the file the interval is
``HOLD_SWITCH_SECONDS``: a thread that wants the lock (the lane after a statement) asks the
holder to let it go after that long. Outside the holds the worker's own interval stands.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: the switch interval while the lane holds the file, in seconds (the worker's 1 ms else)
HOLD_SWITCH_SECONDS = 0.0001


class _Holds:
    """How many blocks hold the short interval now, and the interval they found."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.before = 0.0


_holds = _Holds()


@contextmanager
def brisk_switching(seconds: float = HOLD_SWITCH_SECONDS) -> Iterator[None]:
    """A switch interval of ``seconds`` at most for the block; the one before it once no
    such block runs (several threads may hold one at once)."""
    with _holds.lock:
        _holds.count += 1
        if _holds.count == 1:
            _holds.before = sys.getswitchinterval()
            sys.setswitchinterval(min(_holds.before, seconds))
    try:
        yield
    finally:
        with _holds.lock:
            _holds.count -= 1
            if _holds.count == 0:
                sys.setswitchinterval(_holds.before)
