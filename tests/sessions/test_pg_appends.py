"""On PostgreSQL a step's events and its record are one statement: all of it or none."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from eve.sessions.step_records import NewRecord, read_records
from eve.sessions.store import EventRow, SessionStore
from tests.sessions.own_statements import own_statements


@pytest.fixture
def store(postgres_url: str) -> Iterator[SessionStore]:
    opened = SessionStore("postgresql+psycopg://" + postgres_url.split("://", 1)[1])
    opened.create_session("ses_a")
    yield opened
    opened.close()


def _row(n: int) -> EventRow:
    return EventRow(workflow_id="wf", body_seq=None, step_key="step:0", attempt=0, payload=f"{n}")


def test_a_steps_events_and_its_record_are_one_statement(store: SessionStore) -> None:
    seen = own_statements(store.engine)
    new = NewRecord(workflow_id="wf", key="step:0", record='{"r":1}')
    assert store.append_events("ses_a", 0, [_row(0), _row(1), _row(2)], [new]) == ['{"r":1}']
    assert len(seen) == 1 and seen[0].startswith("WITH appended AS")
    assert store.read_events("ses_a", 0) == ["0", "1", "2"]
    assert store.read(lambda c: read_records(c, "wf")) == {"step:0": '{"r":1}'}
    assert store.next_event_index("ses_a") == 3


def test_a_record_another_run_made_first_is_the_one_returned(store: SessionStore) -> None:
    store.append_events("ses_a", 0, [_row(0)], [NewRecord(workflow_id="wf", key="s", record="1")])
    again = NewRecord(workflow_id="wf", key="s", record="2")
    assert store.append_events("ses_a", 1, [_row(1)], [again]) == ["1"]
    assert store.read_events("ses_a", 0) == ["0", "1"]  # its events are written still


def test_at_a_taken_index_neither_the_events_nor_the_record_are_written(
    store: SessionStore,
) -> None:
    store.append_events("ses_a", 0, [_row(0)])
    new = NewRecord(workflow_id="wf", key="step:1", record="r")
    with pytest.raises(sa.exc.IntegrityError):
        store.append_events("ses_a", 0, [_row(5), _row(6)], [new])
    assert store.read_events("ses_a", 0) == ["0"]
    assert store.read(lambda c: read_records(c, "wf")) == {}
