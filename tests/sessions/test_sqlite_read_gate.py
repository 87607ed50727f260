"""Reads on eve's SQLite file pass a gate of their own, one at a time and a request's first,
beside the writes', while another process is on the file (a write waiting for another
worker's hold no longer holds the reads up, nor they it); alone, through the writes'."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
import sqlalchemy as sa

from eve.sessions.database_errors import fail_fast
from eve.sessions.sqlite_gate import SqliteGate
from eve.sessions.sqlite_requests import request_signal
from eve.sessions.store import SessionStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    made = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    made.create_session("a")
    try:
        yield made
    finally:
        made.close()


def _holding(
    hold: Callable[[], AbstractContextManager[None]], release: threading.Event
) -> threading.Thread:
    """A thread in ``hold()`` (a gate's writes or reads) until ``release``."""
    holding = threading.Event()

    def holder() -> None:
        with hold():
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    assert holding.wait(10)
    return thread


def _read_done_while_a_write_holds(gate: SqliteGate, read: Callable[[], object]) -> bool:
    """Whether ``read``, in a thread, was done while another thread held ``gate``'s writes
    (released after 2 s at most)."""
    release, done = threading.Event(), threading.Event()
    writer = _holding(gate.held, release)
    reader = threading.Thread(target=lambda: (read(), done.set()))
    reader.start()
    try:
        return done.wait(2)
    finally:
        release.set()
        writer.join(10)
        reader.join(10)


def _store_read(store: SessionStore) -> Callable[[], None]:
    def read() -> None:
        assert store.read(lambda c: c.execute(sa.text("SELECT 1")).scalar()) == 1

    return read


def test_a_store_s_read_passes_while_a_write_holds_its_gate_with_another_process_on_the_file(
    store: SessionStore, tmp_path: Path
) -> None:
    gate = store.gate
    assert gate is not None
    # another process's signal on the file: an open file description of its own
    other = request_signal(str(tmp_path / "eve.sqlite"))
    assert other is not None
    try:
        assert _read_done_while_a_write_holds(gate, _store_read(store))
        assert gate.waited == 0
    finally:
        other.close()


def test_a_store_alone_on_its_file_reads_through_the_writes_gate(store: SessionStore) -> None:
    """One process alone: a read beside a write would only take turns with it at the
    interpreter's lock."""
    gate = store.gate
    assert gate is not None
    assert not _read_done_while_a_write_holds(gate, _store_read(store))
    assert gate.waited == 1


def test_a_gate_without_separate_reads_holds_a_read_behind_a_write() -> None:
    gate = SqliteGate()

    def read() -> None:
        with gate.reading():
            pass

    assert not _read_done_while_a_write_holds(gate, read)
    assert gate.waited == 1


@pytest.fixture
def shared_gate(tmp_path: Path) -> Iterator[SqliteGate]:
    """A gate with separate reads on a file another process is on (its signal: an open
    file description of its own)."""
    mine, other = (request_signal(str(tmp_path / "eve.sqlite")) for _ in range(2))
    assert mine is not None and other is not None
    yield SqliteGate(signal=mine, separate_reads=True)
    other.close()
    mine.close()


def test_reads_pass_one_at_a_time_a_request_s_first(shared_gate: SqliteGate) -> None:
    gate = shared_gate
    order: list[str] = []
    holding, release = threading.Event(), threading.Event()

    def first() -> None:
        with gate.reading():
            holding.set()
            release.wait(10)
        order.append("first")

    def reader(name: str) -> None:
        if name == "request":
            with fail_fast(), gate.reading():
                order.append(name)
        else:
            with gate.reading():
                order.append(name)

    threads = [threading.Thread(target=first)]
    threads[0].start()
    assert holding.wait(10)
    reads = gate._reads
    assert reads is not None
    for count, name in enumerate(("background", "request"), start=1):
        threads.append(threading.Thread(target=reader, args=(name,)))
        threads[-1].start()
        while reads.waited < count:
            time.sleep(0.001)
    release.set()
    for thread in threads:
        thread.join(10)
    assert order == ["first", "request", "background"]


def test_a_thread_holding_the_writes_gate_reads_through_it(shared_gate: SqliteGate) -> None:
    """A write's transaction may read (a callback calls the store): it passes no second
    gate, so a reader that waits for this thread's write never stands in its way."""
    gate = shared_gate
    reads = gate._reads
    assert reads is not None
    release = threading.Event()
    other = _holding(gate.reading, release)
    try:
        with gate.held(), gate.reading():
            done = True  # not held up by the other thread's read
        assert done and reads.waited == 0
    finally:
        release.set()
        other.join(10)
