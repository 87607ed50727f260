"""WAL checkpoints on a thread of their own: no commit of a session file's engine copies the
WAL back, the checkpoint thread does, and the WAL starts again from its beginning once it did."""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path

import sqlalchemy as sa

from eve._sql_engines import sqlite_engine as shared_sqlite_engine
from eve.sessions.sqlite import sqlite_engine
from eve.sessions.wal_checkpoints import (
    CHECKPOINTS,
    NO_AUTOCHECKPOINT,
    _Checkpointer,
    dispose_engine,
)

#: a row of about 30 pages, so that each commit appends as many to the WAL
ROW = "INSERT INTO t VALUES (randomblob(120000))"


def _write(engine: sa.Engine, commits: int) -> None:
    for _ in range(commits):
        with engine.begin() as c:
            c.exec_driver_sql(ROW)


def _unwatched(path: Path) -> sa.Engine:
    """An engine as a session file's, which only the test's own checkpointer watches."""
    return shared_sqlite_engine(f"sqlite:///{path}", pragmas=[NO_AUTOCHECKPOINT])


def _table(path: Path) -> sa.Engine:
    engine = _unwatched(path)
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (b BLOB)")
    return engine


def _watched_by_the_test(engine: sa.Engine, path: Path) -> _Checkpointer:
    checkpoints = _Checkpointer(interval=3600)  # passes run by the test alone
    checkpoints.watch(engine, str(path))
    return checkpoints


def test_a_session_files_engine_is_checkpointed_by_the_thread(tmp_path: Path) -> None:
    engine = sqlite_engine(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    with engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
    assert engine in CHECKPOINTS._files
    engine.dispose()


def test_commits_leave_the_checkpoint_to_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "eve.sqlite"
    engine = _table(path)
    # past SQLite's 1,000 pages, where one of these commits would have copied them back
    _write(engine, 40)
    in_file = path.stat().st_size
    assert in_file < 100_000  # only the schema: every row is still in the WAL
    checkpoints = _watched_by_the_test(engine, path)
    assert checkpoints.run_once()
    assert checkpoints.runs == 1
    assert path.stat().st_size > 40 * 120_000  # the rows are in the file now
    checkpoints.run_once()
    assert checkpoints.runs == 1  # the WAL is as it was: nothing to copy
    engine.dispose()


def test_the_wal_starts_again_once_checkpointed(tmp_path: Path) -> None:
    path = tmp_path / "eve.sqlite"
    engine = _table(path)
    checkpoints = _watched_by_the_test(engine, path)
    sizes = []
    for _ in range(4):
        _write(engine, 10)
        checkpoints.run_once()
        sizes.append(os.path.getsize(f"{path}-wal"))
    # each round overwrote the WAL from its start rather than appending to it
    assert max(sizes) == sizes[0]
    assert checkpoints.runs == 4
    engine.dispose()


def test_the_thread_ends_with_the_last_engine(tmp_path: Path) -> None:
    path = tmp_path / "eve.sqlite"
    engine = _unwatched(path)
    # no pass until the test wakes the thread: a pass holds its engines (an engine is in
    # reference cycles), and one under way as the collection below ran kept this engine
    # past it, and the thread with it until a later full collection
    checkpoints = _Checkpointer(interval=3600)
    checkpoints.watch(engine, str(path))
    thread = checkpoints._thread
    assert thread is not None and thread.is_alive()
    engine.dispose()
    del engine
    gc.collect()
    checkpoints._wake.set()
    thread.join(5)  # its next pass finds no engine
    assert not thread.is_alive()
    assert checkpoints._thread is None


def test_a_forked_child_starts_afresh(tmp_path: Path) -> None:
    path = tmp_path / "eve.sqlite"
    engine = _unwatched(path)
    checkpoints = _watched_by_the_test(engine, path)
    checkpoints.forked()  # as in a child: the parent's thread and engines are not its own
    assert checkpoints._thread is None
    assert engine not in checkpoints._files
    engine.dispose()


def test_a_failed_checkpoint_is_tried_again_at_the_next_pass(tmp_path: Path) -> None:
    path = tmp_path / "eve.sqlite"
    engine = _table(path)
    _write(engine, 2)
    refusals = [RuntimeError("the pool is closed")]

    def refuse(_connection: sa.Connection) -> None:
        if refusals:
            raise refusals.pop()

    sa.event.listen(engine, "engine_connect", refuse)
    checkpoints = _watched_by_the_test(engine, path)
    checkpoints.run_once()
    assert checkpoints.runs == 0
    checkpoints.run_once()  # the WAL did not change since, and is copied all the same
    assert checkpoints.runs == 1
    engine.dispose()


def test_an_engine_disposed_of_is_watched_no_more(tmp_path: Path) -> None:
    through_eve = sqlite_engine(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    bare = sqlite_engine(f"sqlite:///{tmp_path / 'dbos.sqlite'}")
    assert through_eve in CHECKPOINTS._files and bare in CHECKPOINTS._files
    dispose_engine(through_eve)
    bare.dispose()  # SQLAlchemy's engine_disposed: not watched either
    assert through_eve not in CHECKPOINTS._files
    assert bare not in CHECKPOINTS._files


def test_a_forgotten_file_is_not_checkpointed(tmp_path: Path) -> None:
    path = tmp_path / "eve.sqlite"
    engine = _table(path)
    checkpoints = _watched_by_the_test(engine, path)
    _write(engine, 2)
    checkpoints.forget(engine)
    checkpoints.run_once()
    assert checkpoints.runs == 0
    engine.dispose()


def test_a_disposal_waits_for_the_checkpoint_under_way_and_leaves_no_wal(
    tmp_path: Path,
) -> None:
    """A checkpoint's connection, checked out as the engine was disposed, went back to the
    disposed pool and stayed open (until a collection): the WAL stayed beside the file, and a
    copy of the file alone missed what it held (``tests/session_files.py`` found it so)."""
    path = tmp_path / "eve.sqlite"
    engine = _table(path)
    _write(engine, 2)
    checkpoints = _watched_by_the_test(engine, path)
    in_checkpoint = threading.Event()
    go_on = threading.Event()
    passes: list[threading.Thread] = []

    def hold(*_args: object) -> None:
        if threading.current_thread() in passes:
            in_checkpoint.set()
            go_on.wait(10)

    sa.event.listen(engine, "checkout", hold)
    passes.append(threading.Thread(target=checkpoints.run_once))

    def dispose() -> None:
        checkpoints.forget(engine)  # what dispose_engine does, on the test's checkpointer
        engine.dispose()

    disposal = threading.Thread(target=dispose)
    gc.disable()  # the disposed pool's connections close at a collection: none comes
    try:
        passes[0].start()
        assert in_checkpoint.wait(10)
        disposal.start()
        disposal.join(0.2)
        assert disposal.is_alive()  # waiting for the checkpoint under way
        go_on.set()
        passes[0].join(10)
        disposal.join(10)
        assert checkpoints.runs == 1
        assert sorted(p.name for p in tmp_path.iterdir()) == ["eve.sqlite"]
    finally:
        go_on.set()
        gc.enable()
