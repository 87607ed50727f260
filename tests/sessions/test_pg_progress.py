"""A body's first read, with its place marked started: the same answer on SQLite and
PostgreSQL, and on PostgreSQL one statement (``eve/sessions/pg_progress.py``)."""

from __future__ import annotations

import sqlalchemy as sa

from eve.sessions.accepted import PlaceStarts, accept
from eve.sessions.step_records import NewRecord
from eve.sessions.store import EventRow, SessionStore, StartingCheckpoint, TurnProgress
from eve.sessions.tables import accepted_places
from tests.sessions.own_statements import own_statements

WORKFLOW = "ses_a:turn-1"


def _state(store: SessionStore) -> str:
    query = sa.select(accepted_places.c.state).where(accepted_places.c.workflow_id == WORKFLOW)
    return str(store.read(lambda c: c.execute(query).scalar()))


def _session_with_a_started_body(store: SessionStore) -> None:
    """A session with a checkpoint, its turn 1 accepted, asked to cancel, and two steps of it
    in the log (the second retried), the first recorded."""
    store.create_session("ses_a")
    store.save_checkpoint("ses_a", '{"turns":1}', after=0, saved_by="ses_a:turn-0")
    store.run(lambda c: accept(c, session_id="ses_a", turn=1, kind="turn", workflow_id=WORKFLOW))
    row = lambda key, attempt, seq: EventRow(  # noqa: E731
        workflow_id=WORKFLOW, body_seq=seq, step_key=key, attempt=attempt, payload="{}"
    )
    record = NewRecord(workflow_id=WORKFLOW, key="step:0", record='{"run":1}')
    store.append_events("ses_a", 0, [row("step:0", 0, None), row("step:0", 0, None)], [record])
    store.append_events("ses_a", 2, [row("step:1", 0, None), row("step:1", 1, None)])
    store.append_events("ses_a", 4, [row(None, None, 0)])
    store.request_cancel("ses_a", WORKFLOW)


def _progress(store: SessionStore) -> TurnProgress:
    return store.turn_progress(
        WORKFLOW,
        records_of=WORKFLOW,
        checkpoint_of="ses_a",
        log_of="ses_a",
        cancel_of=WORKFLOW,
        also=PlaceStarts(WORKFLOW),
    )


def test_a_body_reads_what_it_wrote_and_starts_its_place(either_store: SessionStore) -> None:
    store = either_store
    _session_with_a_started_body(store)
    assert _state(store) == "accepted"
    progress = _progress(store)
    assert _state(store) == "enqueued"
    assert progress.attempts == {"step:0": 0, "step:1": 1}
    assert progress.written == {("step:0", 0): 2, ("step:1", 0): 1, ("step:1", 1): 1}
    assert progress.last_body_seq == 0 and not progress.finished
    assert progress.records == {"step:0": '{"run":1}'}
    assert progress.checkpoint == StartingCheckpoint(version=1, data='{"turns":1}')
    assert progress.next_index == 5
    assert progress.cancel_requested


def test_on_postgresql_a_bodys_first_read_is_one_statement(postgres_url: str) -> None:
    store = SessionStore(postgres_url)
    try:
        _session_with_a_started_body(store)
        seen = own_statements(store.engine)
        _progress(store)
        # the one statement, and the read of the body's last event (it has one: seq 0)
        assert len(seen) == 2 and seen[0].startswith("WITH started AS")
        assert _state(store) == "enqueued"
    finally:
        store.close()


def test_a_new_body_of_a_new_session_starts_from_nothing(either_store: SessionStore) -> None:
    store = either_store
    store.create_session("ses_a")
    store.run(lambda c: accept(c, session_id="ses_a", turn=1, kind="turn", workflow_id=WORKFLOW))
    progress = _progress(store)
    assert progress == TurnProgress(
        last_body_seq=-1,
        attempts={},
        checkpoint=StartingCheckpoint(version=0, data=None),
        next_index=0,
    )
    assert _state(store) == "enqueued"


def test_without_a_session_row_the_log_says_where_it_ends(either_store: SessionStore) -> None:
    """A body whose session row is gone (or never was) still finds its log's end."""
    store = either_store
    rows = [EventRow(workflow_id="x", body_seq=None, step_key=None, attempt=None, payload="{}")]
    store.append_events("ses_gone", 0, rows * 3)
    progress = store.turn_progress(WORKFLOW, log_of="ses_gone", also=PlaceStarts(WORKFLOW))
    assert progress.next_index == 3 and progress.checkpoint is None


def test_other_work_with_the_reads_runs_in_their_transaction(either_store: SessionStore) -> None:
    store = either_store
    store.create_session("ses_a")
    ran: list[bool] = []
    progress = store.turn_progress(WORKFLOW, log_of="ses_a", also=lambda c: ran.append(True))
    assert ran == [True] and progress.next_index == 0
