"""Reads on eve's SQLite file pass a gate of their own, one at a time and a request's first,
beside the writes' (a write waiting for another worker's hold no longer holds the reads up,
nor they it)."""

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


def test_a_store_s_read_passes_while_a_write_holds_its_gate(store: SessionStore) -> None:
    gate = store.gate
    assert gate is not None

    def read() -> None:
        assert store.read(lambda c: c.execute(sa.text("SELECT 1")).scalar()) == 1

    assert _read_done_while_a_write_holds(gate, read)
    assert gate.waited == 0


def test_a_gate_without_separate_reads_holds_a_read_behind_a_write() -> None:
    gate = SqliteGate()

    def read() -> None:
        with gate.reading():
            pass

    assert not _read_done_while_a_write_holds(gate, read)
    assert gate.waited == 1


def test_reads_pass_one_at_a_time_a_request_s_first() -> None:
    gate = SqliteGate(separate_reads=True)
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


def test_a_thread_holding_the_writes_gate_reads_through_it() -> None:
    """A write's transaction may read (a callback calls the store): it passes no second
    gate, so a reader that waits for this thread's write never stands in its way."""
    gate = SqliteGate(separate_reads=True)
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
