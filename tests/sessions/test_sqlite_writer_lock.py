"""Eve's SQLite file handed from one process's writer to another's
(``eve/sessions/sqlite_writer_lock.py``): a writer that finds another process holding the
writer lock sleeps until it is let go, by a commit or by the holder's death; the event
loop's claim does not take it; a group of the turns' writes takes it, and a writer that
does not take it is still kept out by SQLite's lock."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import wait
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from eve.sessions.claim_now import LoopClaims
from eve.sessions.sqlite_requests import RequestSignal, request_signal
from eve.sessions.sqlite_writer_lock import WriterLock
from eve.sessions.store import SessionStore
from eve.sessions.writer_lane import WriterLane
from tests.sessions.test_group_commit import Held, payloads, row
from tests.sessions.test_sqlite_requests import FORK_AND_WAIT

#: a process that takes the writer lock, says so, lets it go at a line on its stdin, and
#: waits for its stdin to end (or is killed before)
_TAKE_AND_WAIT = """
import sys
from eve.sessions.sqlite_requests import request_signal
signal = request_signal(sys.argv[1])
assert signal.writer.take()
print("taken", flush=True)
sys.stdin.readline()
signal.writer.let_go()
print("let go", flush=True)
sys.stdin.read()
"""

#: as ``_TAKE_AND_WAIT``, with a child forked while the lock is held, which outlives it
_TAKE_FORK_AND_WAIT = FORK_AND_WAIT.format(hold="assert signal.writer.take()", said="taken")


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "eve.sqlite"


def _writer(signal: RequestSignal | None) -> WriterLock:
    assert signal is not None and signal.writer is not None
    return signal.writer


@pytest.fixture
def mine(database: Path) -> Iterator[RequestSignal]:
    made = request_signal(str(database))
    assert made is not None
    yield made
    made.close()


@pytest.fixture
def other(database: Path) -> Iterator[RequestSignal]:
    """The lock as another process on the file has it (an open file description of its
    own: what tells one process's lock from another's)."""
    made = request_signal(str(database))
    assert made is not None
    yield made
    made.close()


class _Holder:
    """Another process that holds the writer lock: what it said first, and the process."""

    def __init__(self, database: Path, script: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", script, str(database)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        self.said = self.stdout.readline().split()
        assert self.said[0] == b"taken"


@contextlib.contextmanager
def _holder(database: Path, script: str = _TAKE_AND_WAIT) -> Iterator[_Holder]:
    """Another process that holds the writer lock for the block, killed after it."""
    holder = _Holder(database, script)
    try:
        yield holder
    finally:
        holder.process.kill()
        holder.process.wait(10)


def _taking(writer: WriterLock) -> tuple[threading.Thread, list[bool]]:
    """A thread that takes ``writer`` (waiting for it), its outcome in the list."""
    taken: list[bool] = []
    thread = threading.Thread(target=lambda: taken.append(writer.take()))
    thread.start()
    return thread, taken


def test_a_writer_waits_for_another_process_s_lock_until_it_lets_go(
    database: Path, mine: RequestSignal
) -> None:
    writer = _writer(mine)
    with _holder(database) as holder:
        assert not writer.try_take()
        thread, taken = _taking(writer)
        thread.join(0.2)
        assert thread.is_alive() and not taken  # asleep in the kernel
        holder.stdin.write(b"go\n")
        holder.stdin.flush()
        thread.join(10)
        assert taken == [True] and writer.waited == 1
        assert holder.stdout.readline() == b"let go\n"
        writer.let_go()


def test_a_writer_waiting_for_a_killed_process_s_lock_gets_it(
    database: Path, mine: RequestSignal
) -> None:
    writer = _writer(mine)
    with _holder(database) as holder:
        thread, taken = _taking(writer)
        thread.join(0.2)
        assert thread.is_alive()
        holder.process.kill()  # SIGKILL, mid-hold: the kernel lets it go with the process
        thread.join(10)
    assert taken == [True]
    writer.let_go()


def test_a_killed_process_s_lock_goes_with_it_while_a_child_it_forked_lives(
    database: Path, mine: RequestSignal
) -> None:
    writer = _writer(mine)
    with _holder(database, _TAKE_FORK_AND_WAIT) as holder:
        child = int(holder.said[1])
        try:
            assert not writer.try_take()
            holder.process.kill()
            holder.process.wait(10)
            os.kill(child, 0)  # the child lives on (it waits on the same stdin)
            assert writer.try_take()  # the child closed its copy as it was forked
            writer.let_go()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


def test_a_writer_closed_while_it_waits_closes_its_file_once_the_wait_ends(
    mine: RequestSignal, other: RequestSignal
) -> None:
    theirs, writer = _writer(other), _writer(mine)
    assert theirs.take()
    thread, taken = _taking(writer)
    thread.join(0.2)
    assert thread.is_alive()
    mine.close()  # (a store closed while its lane waits)
    assert not writer.try_take() and writer._fd != -1  # the waiting call still has it
    theirs.let_go()
    thread.join(10)
    assert taken == [True] and writer._fd == -1
    assert theirs.try_take()  # the waiter's description went with its close
    theirs.let_go()


def test_a_claim_on_the_loop_takes_the_file_while_another_process_holds_the_lock(
    database: Path, other: RequestSignal
) -> None:
    """A claim tries SQLite's lock alone: the writer lock is the lanes' order, and a lane
    that holds it may still be waiting for its interpreter lock."""
    store = SessionStore(f"sqlite:///{database}")
    claims = LoopClaims(store)
    try:
        store.create_session("s")
        theirs = _writer(other)
        assert theirs.take()
        assert claims.claim("s", lambda c, turn: turn) == 0
        assert claims.on_loop == 1
        theirs.let_go()
    finally:
        claims.close()
        store.close()


def test_a_group_sleeps_until_another_process_lets_the_lock_go_then_begins_once(
    database: Path, other: RequestSignal
) -> None:
    store = SessionStore(f"sqlite:///{database}")
    lane = WriterLane()
    try:
        for name in ("a", "b"):
            store.create_session(name)
        tries: list[str] = []

        def trace(dbapi: Any, _record: Any) -> None:
            dbapi.set_trace_callback(tries.append)

        store.engine.pool.dispose()  # (the engine's own would close the store's signal)
        sa.event.listen(store.engine, "connect", trace)
        theirs = _writer(other)
        assert theirs.take()
        held = Held(lane)
        futures = [held.write(store, store.append_events, n, 0, [row(n)]) for n in ("a", "b")]
        held.release()
        assert not wait(futures, timeout=0.2).done
        assert tries.count("BEGIN IMMEDIATE") == 0  # it waits for the lock, not SQLite's
        theirs.let_go()
        assert [f.result(10) for f in futures] == [[], []]
        assert tries.count("BEGIN IMMEDIATE") == 1 and lane.groups == {1: 1, 2: 1}
        assert theirs.try_take()  # let go after the group's commit
        theirs.let_go()
        assert payloads(store, "a") == ["a"]
    finally:
        lane.shutdown()
        store.close()


def test_a_group_lets_the_lock_go_as_its_commit_begins(
    database: Path, other: RequestSignal
) -> None:
    """The waiting worker wakes while the ``COMMIT`` runs, not once its holder has the
    interpreter's lock back after it."""
    store = SessionStore(f"sqlite:///{database}")
    lane = WriterLane()
    theirs = _writer(other)
    free_at: dict[str, bool] = {}

    def look(statement: str) -> None:
        if statement in ("BEGIN IMMEDIATE", "COMMIT"):
            free_at[statement] = theirs.try_take()
            theirs.let_go()

    def trace(dbapi: Any, _record: Any) -> None:
        dbapi.set_trace_callback(look)

    try:
        for name in ("a", "b"):
            store.create_session(name)
        store.engine.pool.dispose()  # (the engine's own would close the store's signal)
        sa.event.listen(store.engine, "connect", trace)
        held = Held(lane)
        futures = [held.write(store, store.append_events, n, 0, [row(n)]) for n in ("a", "b")]
        held.release()
        assert [f.result(10) for f in futures] == [[], []]
        assert free_at == {"BEGIN IMMEDIATE": False, "COMMIT": True}
    finally:
        lane.shutdown()
        store.close()
