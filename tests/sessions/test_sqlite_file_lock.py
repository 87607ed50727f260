"""The SQLite file's write lock across processes: two processes' writes take turns at it
rather than at SQLite's busy handler, a process killed while holding it stalls no one, and
a process forked from a holder does not share its lock."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection as Pipe
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from eve.sessions.sqlite import sqlite_engine
from eve.sessions.sqlite_file_lock import FileLock
from eve.sessions.sqlite_gate import SqliteGate

#: forked, not spawned: a child re-importing eve would cost a second or more
_FORK = multiprocessing.get_context("fork")
WRITES = 60


def _store_like(path: Path, *, busy_timeout: float) -> tuple[Engine, SqliteGate]:
    """An engine as eve's store opens it: its transactions hold the gate."""
    gate = SqliteGate()
    return sqlite_engine(f"sqlite:///{path}", busy_timeout=busy_timeout, gate=gate), gate


def _counted_writes(path: str, writes: int) -> None:
    # no busy timeout at all: a write that found SQLite's lock taken would fail at once
    engine, gate = _store_like(Path(path), busy_timeout=0.0)
    for _ in range(writes):
        with gate.held(), engine.begin() as c:
            c.execute(sa.text("UPDATE counter SET n = n + 1"))
            c.execute(sa.text("INSERT INTO log (pid) VALUES (:pid)"), {"pid": os.getpid()})
    engine.dispose()


def _prepared(tmp_path: Path) -> Path:
    path = tmp_path / "eve.sqlite"
    engine, _ = _store_like(path, busy_timeout=10.0)
    with engine.begin() as c:
        c.execute(sa.text("CREATE TABLE counter (n INTEGER)"))
        c.execute(sa.text("CREATE TABLE log (pid INTEGER)"))
        c.execute(sa.text("INSERT INTO counter VALUES (0)"))
    engine.dispose()
    return path


def started(target: Callable[..., None], *args: object) -> multiprocessing.Process:
    child = _FORK.Process(target=target, args=args, daemon=True)
    child.start()
    return child


def test_two_processes_writes_take_turns_at_the_file_lock(tmp_path: Path) -> None:
    path = _prepared(tmp_path)
    children = [started(_counted_writes, str(path), WRITES) for _ in range(2)]
    for child in children:
        child.join(60)
    assert [child.exitcode for child in children] == [0, 0]
    engine, _ = _store_like(path, busy_timeout=10.0)
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT n FROM counter")).scalar() == 2 * WRITES
        pids = c.execute(sa.text("SELECT pid, count(*) FROM log GROUP BY pid")).all()
    engine.dispose()
    assert sorted(n for _, n in pids) == [WRITES, WRITES]


def hold_a_write(path: str, holding: Pipe) -> None:
    """Write to the file at ``path`` as eve does, tell ``holding``, and hold on until killed."""
    engine, gate = _store_like(Path(path), busy_timeout=10.0)
    with engine.begin() as c:
        c.execute(sa.text("CREATE TABLE IF NOT EXISTS log (pid INTEGER)"))
    with gate.held(), engine.begin() as c:
        c.execute(sa.text("INSERT INTO log (pid) VALUES (:pid)"), {"pid": os.getpid()})
        holding.send("holding")
        threading.Event().wait()  # until killed, holding the file lock and SQLite's


def test_a_process_killed_holding_the_lock_does_not_stall_another(tmp_path: Path) -> None:
    path = _prepared(tmp_path)
    ours, theirs = _FORK.Pipe()
    holder = started(hold_a_write, str(path), theirs)
    assert ours.poll(30) and ours.recv() == "holding"
    engine, gate = _store_like(path, busy_timeout=10.0)
    done = threading.Event()

    def write() -> None:
        with gate.held(), engine.begin() as c:
            c.execute(sa.text("INSERT INTO log (pid) VALUES (:pid)"), {"pid": os.getpid()})
        done.set()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    assert gate.file_lock is not None
    deadline = time.monotonic() + 30
    while not gate.file_lock.waited:  # on the file lock, not asleep in SQLite
        assert time.monotonic() < deadline and not done.is_set()
        time.sleep(0.005)
    assert holder.pid is not None
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(30)
    # a bound on failing, not a timing: a lock left behind would hold it for good
    assert done.wait(30), "the write stalled behind a dead process's lock"
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT pid FROM log")).scalars().all() == [os.getpid()]
    engine.dispose()


def _try_inherited(lock: FileLock, told: Pipe) -> None:
    lock.acquire()  # waits for the parent, unless it shared the parent's lock
    told.send(lock.waited)
    lock.release()


def waiter_on(path: Path) -> bool:
    """Whether a process waits for the ``flock`` of ``path`` (a ``->`` line of
    ``/proc/locks``, whose file is ``major:minor:inode``)."""
    inode = f":{path.stat().st_ino} "
    return any("->" in line and inode in line for line in Path("/proc/locks").open())


def test_a_forked_child_does_not_share_its_parents_lock(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / "eve.sqlite")
    assert lock.acquire()
    ours, theirs = _FORK.Pipe()
    child = started(_try_inherited, lock, theirs)
    try:
        deadline = time.monotonic() + 30
        while not waiter_on(lock.path):
            assert not ours.poll(0.005), "the child took the lock its parent holds"
            assert time.monotonic() < deadline
    finally:
        lock.release()
    assert ours.poll(30) and ours.recv() == 1
    child.join(30)
    assert child.exitcode == 0
    lock.close()
