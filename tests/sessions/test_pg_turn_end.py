"""A turn's end on PostgreSQL: its last events, its last step's record, its checkpoint and its
place done in one transaction, in fewer statements (``pg_appends.first_record``,
``accepted.finish_and_next``, ``store.write_checkpoint``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.accepted import Place, accept, finish_and_next, mark_started
from eve.sessions.step_records import NewRecord, read_records
from eve.sessions.store import EventRow, SessionStore, write_checkpoint
from eve.sessions.tables import accepted_places
from tests.sessions.own_statements import own_statements

ENDING = "ses_a:turn-0"
NEXT = "ses_a:turn-1"


class Refused(Exception):
    pass


@pytest.fixture
def store(postgres_url: str) -> Iterator[SessionStore]:
    opened = SessionStore(postgres_url)
    opened.create_session("ses_a")
    for turn, workflow_id in enumerate((ENDING, NEXT)):
        opened.run(
            lambda c, t=turn, w=workflow_id: accept(
                c, session_id="ses_a", turn=t, kind="turn", workflow_id=w
            )
        )
    yield opened
    opened.close()


def _rows(n: int) -> list[EventRow]:
    row = EventRow(workflow_id=ENDING, body_seq=None, step_key="step:2", attempt=0, payload="{}")
    return [row] * n


def _states(store: SessionStore) -> dict[str, str]:
    query = sa.select(accepted_places.c.workflow_id, accepted_places.c.state)
    return dict(store.read(lambda c: c.execute(query).all()))  # type: ignore[arg-type]


def _end(c: Connection) -> Place | None:
    return finish_and_next(c, "ses_a", ENDING)


def test_the_end_rides_with_the_last_steps_events_and_record(store: SessionStore) -> None:
    seen = own_statements(store.engine)
    record = NewRecord(workflow_id=ENDING, key="step:2", record='{"r":3}')
    done = store.append_events("ses_a", 0, _rows(2), [record, _end])
    assert done[0] == '{"r":3}'
    assert isinstance(done[1], Place) and done[1].workflow_id == NEXT
    # the events with the record; the place done with the session's row locked; the head
    assert [s.split()[0] for s in seen] == ["WITH", "WITH", "SELECT"]
    assert "FOR UPDATE" in seen[1]
    assert store.read_events("ses_a", 0) == ["{}", "{}"]
    assert store.read(lambda c: read_records(c, ENDING)) == {"step:2": '{"r":3}'}
    assert _states(store) == {ENDING: "done", NEXT: "accepted"}


def test_an_end_that_fails_leaves_neither_events_nor_record(store: SessionStore) -> None:
    def refuse(_c: Connection) -> None:
        raise Refused

    record = NewRecord(workflow_id=ENDING, key="step:2", record="r")
    with pytest.raises(Refused):
        store.append_events("ses_a", 0, _rows(1), [record, _end, refuse])
    assert store.read_events("ses_a", 0) == []
    assert store.read(lambda c: read_records(c, ENDING)) == {}
    assert _states(store) == {ENDING: "accepted", NEXT: "accepted"}


def test_a_next_place_started_already_is_not_started_again(store: SessionStore) -> None:
    store.run(lambda c: mark_started(c, NEXT))
    assert store.run(_end) is None
    assert _states(store) == {ENDING: "done", NEXT: "enqueued"}


def test_a_save_over_the_row_two_versions_back_is_one_statement(store: SessionStore) -> None:
    """The row recycled and the session pointed at it at once; a first save still drops and
    inserts (nothing to recycle) after pointing the session at it, in its transaction."""
    seen = own_statements(store.engine)
    store.run(lambda c: write_checkpoint(c, "ses_a", 1, '{"turns":1}'))
    assert [s.split()[0] for s in seen] == ["WITH", "DELETE", "INSERT"]
    store.run(lambda c: write_checkpoint(c, "ses_a", 2, '{"turns":2}'))
    seen.clear()
    store.run(lambda c: write_checkpoint(c, "ses_a", 3, '{"turns":3}'))
    assert [s.split()[0] for s in seen] == ["WITH"]
    assert store.load_checkpoint("ses_a") == '{"turns":3}'
    assert store.checkpoint_at("ses_a", 2) == '{"turns":2}'
