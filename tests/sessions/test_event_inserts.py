"""A batch of events on SQLite is one INSERT (one step of SQLite, one release of the
interpreter's lock), not one per row; a taken index fails the whole batch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from eve.sessions import event_inserts
from eve.sessions.store import EventRow, SessionStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    made = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    made.create_session("s")
    try:
        yield made
    finally:
        made.close()


def rows(*texts: str) -> list[EventRow]:
    return [
        EventRow(workflow_id="w", body_seq=n, step_key="k", attempt=1, payload=text)
        for n, text in enumerate(texts)
    ]


def inserts(store: SessionStore) -> list[tuple[str, bool]]:
    """The INSERTs into the log run from now on, and whether each was an executemany."""
    seen: list[tuple[str, bool]] = []

    def before(_c: Any, _cursor: Any, statement: str, _params: Any, _ctx: Any, many: bool) -> None:
        if statement.startswith("INSERT INTO eve_events"):
            seen.append((statement, many))

    sa.event.listen(store.engine, "before_cursor_execute", before)
    return seen


def test_a_batch_is_one_statement(store: SessionStore) -> None:
    seen = inserts(store)
    store.append_events("s", 0, rows("a", "b", "c", "d"))
    assert len(seen) == 1 and seen[0][1] is False, seen
    assert store.read_events("s", 0) == ["a", "b", "c", "d"]
    with store.engine.connect() as c:
        stored = c.execute(
            sa.text("SELECT idx, workflow_id, body_seq, step_key, attempt FROM eve_events")
        ).all()
    assert [tuple(r) for r in stored] == [(n, "w", n, "k", 1) for n in range(4)]


def test_a_long_batch_is_cut_in_statements(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(event_inserts, "MOST_ROWS", 2)
    seen = inserts(store)
    store.append_events("s", 0, rows("a", "b", "c", "d", "e"))
    assert len(seen) == 3
    assert store.read_events("s", 0) == ["a", "b", "c", "d", "e"]


def test_a_taken_index_fails_the_whole_batch(store: SessionStore) -> None:
    store.append_events("s", 0, rows("a"))
    with pytest.raises(sa.exc.IntegrityError):
        store.append_events("s", 0, rows("x", "y"))
    assert store.read_events("s", 0) == ["a"]
    store.append_events("s", 1, rows("b", "c"))
    assert store.read_events("s", 0) == ["a", "b", "c"]
