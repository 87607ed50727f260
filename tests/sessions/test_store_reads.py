"""The store's reads on SQLite: they never queue behind a write (in WAL mode a reader never
waits for the writer), and each sees one snapshot, however many statements it runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.store import EventRow, SessionStore
from eve.sessions.tables import events


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    opened = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    opened.create_session("s")
    try:
        yield opened
    finally:
        opened.close()


def _event(n: int) -> EventRow:
    return EventRow(workflow_id=None, body_seq=None, step_key=None, attempt=None, payload=f"{n}")


def test_a_read_runs_while_a_write_transaction_holds_the_gate(store: SessionStore) -> None:
    store.append_events("s", 0, [_event(0)])
    writing, release = threading.Event(), threading.Event()

    def write(c: Connection) -> None:
        c.execute(
            events.insert(), {"session_id": "s", "idx": 1, "payload": "1"}
        )  # the file's write lock, taken
        writing.set()
        release.wait(10)

    writer = threading.Thread(target=store.run, args=(write,))
    writer.start()
    try:
        assert writing.wait(10)
        read: list[object] = []
        reader = threading.Thread(
            target=lambda: read.extend(
                [store.get_session("s"), store.read_events("s", 0), store.next_event_index("s")]
            )
        )
        reader.start()
        reader.join(10)
        # the old gate held every read until the write committed
        assert not reader.is_alive(), "a read waited for the writer"
        row, rows, next_index = read
        assert row is not None and row.status == "active"  # type: ignore[attr-defined]
        assert (rows, next_index) == (["0"], 1)  # what was committed, not the write under way
    finally:
        release.set()
        writer.join(10)
    assert store.read_events("s", 0) == ["0", "1"]


def test_a_read_of_several_statements_sees_one_snapshot(store: SessionStore) -> None:
    store.append_events("s", 0, [_event(0)])
    count = sa.select(sa.func.count()).select_from(events)

    def twice(c: Connection) -> tuple[int, int]:
        before = int(c.execute(count).scalar_one())
        # another thread commits between the two statements (it does not wait for this read)
        committer = threading.Thread(target=store.append_events, args=("s", 1, [_event(1)]))
        committer.start()
        committer.join(10)
        assert not committer.is_alive()
        return before, int(c.execute(count).scalar_one())

    assert store.read(twice) == (1, 1)
    assert store.read(lambda c: int(c.execute(count).scalar_one())) == 2
