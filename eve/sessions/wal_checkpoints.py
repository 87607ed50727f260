"""WAL checkpoints off the writers' path: one thread per process copies each session file's
write-ahead log back into the file, in place of SQLite's automatic checkpoint at a commit.

SQLite checkpoints by itself in the commit that takes the WAL past 1,000 pages (4 MB): that
commit copies every page back and syncs the file twice (``synchronous=NORMAL`` syncs only at
checkpoints), up to 80 ms on this machine's disk. The commit that pays is whichever write
crosses the line: on eve's file the writer lane's group commit, which holds the gate
(``sqlite_gate.py``) meanwhile, so every turn's writes and a request's wait behind it; on
DBOS's file a workflow's start or end, the same. 3,000 commits of 8 rows each on one thread
took 1.2 s with the automatic checkpoint and 0.56 s without (the commits' p99 8.3 ms
against 2.5 ms); py-spy put 10 to 12 % of a loaded worker's busy samples in commits, 4 %
once the checkpoints moved here (and 2 % in this thread).

So the engines of both files turn it off (``wal_autocheckpoint=0``) and this thread runs a
``PASSIVE`` checkpoint every ``INTERVAL_SECONDS`` on each file whose WAL changed since. A
passive checkpoint takes no lock a writer or a reader waits for and never sleeps in the busy
handler: it copies what no reader still needs, and the next one copies the rest; SQLite's
driver lets go of the interpreter's lock meanwhile, so the loop does not wait for the syncs.
Once a checkpoint copied all of the WAL, the next writer starts it again from its beginning,
as after an automatic one, so it does not grow while checkpoints keep up. A process that
opens the file without this thread (another eve command) checkpoints when its last
connection closes, as SQLite always does. A checkpoint that fails (the file gone, the engine
disposed) changes nothing: the next pass tries again, and the WAL keeps every commit
meanwhile.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

logger = logging.getLogger(__name__)

#: how often each file's WAL is checked, and checkpointed if it changed: a loaded worker
#: appends some 1,000 pages a second to eve's file, about what SQLite let its WAL grow to
INTERVAL_SECONDS = 0.25
#: the pragma each engine's connections run (``sqlite.sqlite_engine``)
NO_AUTOCHECKPOINT = "wal_autocheckpoint=0"


@dataclass(slots=True)
class _Wal:
    path: str
    #: the WAL's size and modification time at the last checkpoint
    seen: tuple[int, int] | None = None

    def changed(self) -> bool:
        try:
            stat = os.stat(self.path)
        except OSError:
            return False  # no WAL yet (or no more): nothing to copy
        now = (stat.st_size, stat.st_mtime_ns)
        if now == self.seen:
            return False
        self.seen = now
        return True


class _Checkpointer:
    """The process's thread, started with the first file it watches and ended after the
    last one's engine is gone."""

    def __init__(self, *, interval: float = INTERVAL_SECONDS) -> None:
        self._interval = interval
        self._files: weakref.WeakKeyDictionary[Engine, _Wal] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        #: held for each checkpoint, so that ``forget`` waits for one under way
        self._pass = threading.Lock()
        self._thread: threading.Thread | None = None
        #: never set: the thread waits on it for its interval (an Event's wait is one the
        #: benchmark's profile knows as idle)
        self._wake = threading.Event()
        #: checkpoints run (for tests)
        self.runs = 0

    def watch(self, engine: Engine, database: str) -> None:
        with self._lock:
            self._files[engine] = _Wal(f"{database}-wal")
            self._start()

    def forget(self, engine: Engine) -> None:
        """Stop watching ``engine``'s file; a checkpoint under way on it ends first (its
        connection back in the engine's pool), and none starts on it from now."""
        with self._lock:
            self._files.pop(engine, None)
        with self._pass:
            pass

    def forked(self) -> None:
        """In a forked child: the thread stayed in the parent, and the engines it watched
        are the parent's (their pooled connections must not be used across a fork), so the
        child starts afresh: its own engines start its own thread."""
        self._lock = threading.Lock()
        self._pass = threading.Lock()
        self._thread = None
        self._files = weakref.WeakKeyDictionary()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name="eve-wal-checkpoints", daemon=True
            )
            self._thread.start()

    def _loop(self) -> None:
        while True:
            self._wake.wait(self._interval)
            if not self.run_once():
                return

    def run_once(self) -> bool:
        """One look at every file, a checkpoint of those whose WAL changed (the thread's
        pass, which a test runs itself); False: none is left, and the thread ends. The
        engines are strong references only for the pass, so one dropped meanwhile goes."""
        with self._lock:
            watched = list(self._files.items())
            if not watched:
                self._thread = None
                return False
        for engine, wal in watched:
            with self._pass:
                if self._files.get(engine) is not wal:
                    continue  # forgotten since the pass began: its engine is being disposed
                if wal.changed() and not self._checkpoint(engine):
                    wal.seen = None  # tried again at the next pass
        return True

    def _checkpoint(self, engine: Engine) -> bool:
        try:
            with engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
        except Exception:
            # nothing is lost meanwhile: the WAL keeps every commit until one succeeds
            logger.debug("WAL checkpoint of %s failed", engine.url.database, exc_info=True)
            return False
        self.runs += 1
        return True


CHECKPOINTS = _Checkpointer()
os.register_at_fork(after_in_child=CHECKPOINTS.forked)


def checkpoint_in_background(engine: Engine) -> None:
    """Checkpoint ``engine``'s file (its connections run ``NO_AUTOCHECKPOINT``) from the
    process's checkpoint thread for as long as the engine lives."""
    database = engine.url.database
    # (an in-memory database has no WAL to copy)
    if database and database != ":memory:":
        CHECKPOINTS.watch(engine, database)
        sa.event.listen(engine, "engine_disposed", CHECKPOINTS.forget)


def dispose_engine(engine: Engine) -> None:
    """Dispose of ``engine`` (every connection in its pool closed) once the checkpoints no
    longer watch its file, nor hold one of its connections."""
    CHECKPOINTS.forget(engine)
    engine.dispose()
