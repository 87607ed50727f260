"""A message's claim first across the processes on eve's SQLite file
(``eve/sessions/sqlite_requests.py``): a claim that waits is seen by every process, until
its last mark is let go or its process dies; a gate with the signal holds its background
work back for it (for a while at most), and a group of the turns' writes commits early."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Connection

from eve.sessions.database_errors import fail_fast
from eve.sessions.sqlite_gate import SqliteGate
from eve.sessions.sqlite_requests import SUFFIX, RequestSignal, request_signal
from eve.sessions.store import SessionStore
from eve.sessions.writer_lane import WriterLane
from tests import forked
from tests.sessions.test_group_commit import Held

_MARK_AND_WAIT = """
import sys
from eve.sessions.sqlite_requests import request_signal
signal = request_signal(sys.argv[1])
mark = signal.marked()
mark.__enter__()
print("marked", flush=True)
sys.stdin.read()
"""

#: as ``_MARK_AND_WAIT``, with a child forked while the mark is held, which outlives it
# the child says it is running before the parent says "marked": the fork's hooks (which
# close the child's copies) run before ``fork`` returns in the child, but the child may be
# scheduled long after its parent, on a loaded machine after the parent was killed
_MARK_FORK_AND_WAIT = """
import os, sys
from eve.sessions.sqlite_requests import request_signal
signal = request_signal(sys.argv[1])
mark = signal.marked()
mark.__enter__()
running, says = os.pipe()
child = os.fork()
if child == 0:
    os.write(says, b"r")
    sys.stdin.read()
    os._exit(0)
assert os.read(running, 1) == b"r"
print("marked", child, flush=True)
sys.stdin.read()
"""


def _signal(path: Path) -> RequestSignal:
    made = request_signal(str(path))
    assert made is not None
    return made


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "eve.sqlite"


@pytest.fixture
def other(database: Path) -> Iterator[RequestSignal]:
    """The signal as another process on the file has it (an open file description of its
    own, which is what tells one process's marks from another's)."""
    made = _signal(database)
    yield made
    made.close()


def test_a_mark_is_seen_by_every_process_until_its_last_holder_lets_go(
    database: Path, other: RequestSignal
) -> None:
    mine = _signal(database)
    try:
        assert not other.waiting and not mine.waiting
        with mine.marked():
            with mine.marked():
                assert other.waiting and mine.waiting  # its own process's looks see it too
            assert other.waiting  # one request of the process still waits
        assert not other.waiting and not mine.waiting
    finally:
        mine.close()


def test_a_killed_process_s_mark_goes_with_it(database: Path, other: RequestSignal) -> None:
    process = forked.popen(
        [sys.executable, "-c", _MARK_AND_WAIT, str(database)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == b"marked\n"
        assert other.waiting
    finally:
        process.kill()
        process.wait(10)
    assert not other.waiting  # the kernel let its lock go: no one waits for a dead request


def test_a_killed_process_s_mark_goes_with_it_while_a_child_it_forked_lives(
    database: Path, other: RequestSignal
) -> None:
    process = forked.popen(
        [sys.executable, "-c", _MARK_FORK_AND_WAIT, str(database)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    child = None
    try:
        assert process.stdout is not None
        said, pid = process.stdout.readline().split()
        assert said == b"marked"
        child = int(pid)
        assert other.waiting  # the child closing its copies left the parent's mark alone
        process.kill()
        process.wait(10)
        os.kill(child, 0)  # the child lives on (it waits on the same stdin)
        # the child closed its copies of the descriptors as it was forked
        assert not other.waiting
    finally:
        process.kill()
        process.wait(10)
        if child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


def test_the_last_process_to_close_the_signal_removes_its_file(database: Path) -> None:
    first, second = _signal(database), _signal(database)
    lock_file = Path(str(database) + SUFFIX)
    first.close()
    assert lock_file.exists()  # the second still has it open
    second.close()
    assert not lock_file.exists()
    again = _signal(database)  # a process that comes later makes it anew
    try:
        assert lock_file.exists()
    finally:
        again.close()


def test_there_is_no_signal_without_a_file() -> None:
    assert request_signal(None) is None
    assert request_signal(":memory:") is None


def test_a_store_s_gate_has_the_signal_until_the_store_closes(database: Path) -> None:
    store = SessionStore(f"sqlite:///{database}")
    assert store.gate is not None and store.gate.signal is not None
    assert Path(str(database) + SUFFIX).exists()
    store.close()
    assert sorted(path.name for path in database.parent.iterdir()) == ["eve.sqlite"]


def _background_enters(gate: SqliteGate) -> tuple[threading.Thread, threading.Event]:
    entered = threading.Event()

    def background() -> None:
        with gate.held():
            entered.set()

    thread = threading.Thread(target=background)
    thread.start()
    return thread, entered


@contextlib.contextmanager
def _gate(database: Path, *, request_patience: float) -> Iterator[SqliteGate]:
    """A gate with its own signal on ``database``, closed after the block."""
    signal = _signal(database)
    try:
        yield SqliteGate(signal=signal, request_patience=request_patience)
    finally:
        signal.close()


def test_background_work_waits_while_another_process_s_claim_waits(
    database: Path, other: RequestSignal
) -> None:
    with _gate(database, request_patience=60.0) as gate:
        with other.marked():
            assert gate.requests_waiting
            thread, entered = _background_enters(gate)
            assert not entered.wait(0.2)
            with fail_fast(), gate.held():
                pass  # a request's own transaction does not wait for it
        assert entered.wait(10)  # the claim is through: the background work goes on
        thread.join(10)
        assert not gate.requests_waiting


def test_background_work_waits_for_another_process_s_claim_only_so_long(
    database: Path, other: RequestSignal
) -> None:
    with _gate(database, request_patience=0.0) as gate, other.marked():
        thread, entered = _background_enters(gate)
        assert entered.wait(10)  # a claim that never comes through holds no one for good
        thread.join(10)


def test_a_group_commits_early_for_another_process_s_claim_and_the_rest_waits_for_it(
    database: Path, other: RequestSignal
) -> None:
    store = SessionStore(f"sqlite:///{database}")
    assert store.gate is not None
    store.gate.request_patience = 60.0
    lane = WriterLane()
    held = Held(lane)
    order: list[str] = []
    mark = other.marked()

    def first(c: Connection) -> None:
        order.append("first")
        mark.__enter__()  # another worker's claim comes to wait for the file meanwhile

    futures = [held.write(store, store.run, first)]
    futures += [
        held.write(store, store.run, lambda c, name=name: order.append(name))
        for name in ("second", "third")
    ]
    try:
        held.release()
        futures[0].result(10)  # committed on its own, the claim waiting
        with pytest.raises(TimeoutError):
            futures[1].result(0.2)  # the rest waits for the claim
        assert order == ["first"]
    finally:
        mark.__exit__(None, None, None)
    for future in futures:
        future.result(10)
    assert order == ["first", "second", "third"]
    assert lane.groups == {1: 2, 2: 1}  # the blocker, the first write's group, the rest's
    lane.shutdown()
    store.close()
