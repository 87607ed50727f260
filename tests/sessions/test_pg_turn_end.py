"""A body's end on PostgreSQL: its last events, its last steps' records, its checkpoint and its
place done in one call of ``eve_end_turn_v1`` (``pg_turn_end.py``), all of it or none, with
the session's next place read after its row is locked; and the checkpoint's own statements
(``store.write_checkpoint``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.accepted import Place, PlaceEnds, accept, mark_started
from eve.sessions.pg_turn_end import NAME
from eve.sessions.step_records import NewRecord, read_records
from eve.sessions.store import CheckpointSave, EventRow, SessionStore, write_checkpoint
from eve.sessions.tables import accepted_places, checkpoints
from tests.sessions.own_statements import own_statements

ENDING = "ses_a:turn-0"
NEXT = "ses_a:turn-1"


class Refused(Exception):
    pass


@pytest.fixture
def store(postgres_url: str) -> Iterator[SessionStore]:
    opened = SessionStore(postgres_url)
    opened.create_session("ses_a")
    _accept(opened, 0, ENDING)
    yield opened
    opened.close()


def _accept(store: SessionStore, turn: int, workflow_id: str) -> None:
    store.run(
        lambda c: accept(c, session_id="ses_a", turn=turn, kind="turn", workflow_id=workflow_id)
    )


def _rows(n: int) -> list[EventRow]:
    row = EventRow(workflow_id=ENDING, body_seq=None, step_key="step:2", attempt=0, payload="{}")
    return [row] * n


def _states(store: SessionStore) -> dict[str, str]:
    query = sa.select(accepted_places.c.workflow_id, accepted_places.c.state)
    return dict(store.read(lambda c: c.execute(query).all()))  # type: ignore[arg-type]


def _end(version: int | None = None) -> PlaceEnds:
    save = None
    if version is not None:
        data = f'{{"turns":{version}}}'
        save = CheckpointSave(session_id="ses_a", version=version, data=data, saved_by=ENDING)
    return PlaceEnds(session_id="ses_a", workflow_id=ENDING, save=save)


def _transactional(store: SessionStore) -> list[bool]:
    """For each statement ``store``'s engine runs on this thread from now on, whether it ran
    in a transaction (its connection not in autocommit mode)."""
    seen: list[bool] = []
    here = threading.get_ident()

    def note(c: Any, *_rest: Any) -> None:
        if threading.get_ident() == here:
            seen.append(not c.connection.dbapi_connection.autocommit)

    sa.event.listen(store.engine, "before_cursor_execute", note)
    return seen


def test_the_end_is_one_call_with_the_last_events_records_and_checkpoint(
    store: SessionStore,
) -> None:
    _accept(store, 1, NEXT)
    seen = own_statements(store.engine)
    in_transaction = _transactional(store)
    records = [
        NewRecord(workflow_id=ENDING, key="step:1:call:0", record='{"r":2}'),
        NewRecord(workflow_id=ENDING, key="step:2", record='{"r":3}'),
    ]
    done = store.append_events("ses_a", 0, _rows(2), [*records, _end(version=1)])
    assert done[:2] == ['{"r":2}', '{"r":3}']
    assert isinstance(done[2], Place) and done[2].workflow_id == NEXT and done[2].turn == 1
    # one statement, committed as it runs: where a transaction took six round trips
    assert len(seen) == 1 and "eve_end_turn_v1(" in seen[0]
    assert in_transaction == [False]
    assert store.read_events("ses_a", 0) == ["{}", "{}"]
    assert store.read(lambda c: read_records(c, ENDING)) == {
        "step:1:call:0": '{"r":2}',
        "step:2": '{"r":3}',
    }
    assert store.load_checkpoint("ses_a") == '{"turns":1}'
    assert _states(store) == {ENDING: "done", NEXT: "accepted"}


def test_saves_recycle_the_row_two_versions_back_and_replace_a_replayed_one(
    store: SessionStore,
) -> None:
    for index, version in enumerate((1, 2, 3, 3)):  # the last a replayed save of version 3
        store.append_events("ses_a", index, _rows(1), [_end(version=version)])
    assert store.load_checkpoint("ses_a") == '{"turns":3}'
    assert store.checkpoint_at("ses_a", 2) == '{"turns":2}'
    kept = sa.select(checkpoints.c.version, checkpoints.c.saved_by)
    assert sorted(store.read(lambda c: c.execute(kept).all())) == [(2, ENDING), (3, ENDING)]
    assert store.checkpoint_version("ses_a") == 3


def test_an_end_without_events_nor_records_still_ends_the_place(store: SessionStore) -> None:
    _accept(store, 1, NEXT)
    done = store.append_events("ses_a", 0, [], [_end()])
    assert len(done) == 1 and isinstance(done[0], Place) and done[0].workflow_id == NEXT
    assert store.load_checkpoint("ses_a") is None  # no save asked for
    assert _states(store) == {ENDING: "done", NEXT: "accepted"}


def test_an_end_at_a_taken_index_writes_nothing(store: SessionStore) -> None:
    store.append_events("ses_a", 1, _rows(1))
    record = NewRecord(workflow_id=ENDING, key="step:2", record="r")
    with pytest.raises(sa.exc.IntegrityError):
        store.append_events("ses_a", 0, _rows(2), [record, _end(version=1)])
    assert store.read_events("ses_a", 0) == ["{}"]  # the one written before
    assert store.read(lambda c: read_records(c, ENDING)) == {}
    assert store.load_checkpoint("ses_a") is None
    assert _states(store) == {ENDING: "accepted"}


def test_a_record_another_run_made_first_is_the_one_returned(store: SessionStore) -> None:
    store.append_events("ses_a", 0, _rows(1), [NewRecord(workflow_id=ENDING, key="s", record="1")])
    again = NewRecord(workflow_id=ENDING, key="s", record="2")
    assert store.append_events("ses_a", 1, _rows(1), [again, _end()]) == ["1", None]


def test_a_next_place_started_already_is_not_started_again(store: SessionStore) -> None:
    _accept(store, 1, NEXT)
    store.run(lambda c: mark_started(c, NEXT))
    assert store.append_events("ses_a", 0, _rows(1), [_end(version=1)]) == [None]
    assert _states(store) == {ENDING: "done", NEXT: "enqueued"}


def test_an_end_that_is_not_only_records_and_a_place_runs_in_a_transaction(
    store: SessionStore,
) -> None:
    def refuse(_c: Connection) -> None:
        raise Refused

    record = NewRecord(workflow_id=ENDING, key="step:2", record="r")
    with pytest.raises(Refused):
        store.append_events("ses_a", 0, _rows(1), [record, _end(version=1), refuse])
    assert store.read_events("ses_a", 0) == []
    assert store.read(lambda c: read_records(c, ENDING)) == {}
    assert _states(store) == {ENDING: "accepted"}


@pytest.mark.parametrize("version", [None, 1], ids=["no save", "with its save"])
def test_a_message_accepted_while_the_end_waits_for_the_row_is_started_by_it(
    store: SessionStore, version: int | None
) -> None:
    """A claim holds the session's row and accepts the next place, which it leaves to the
    ending body (the body's place is not done yet); the end, waiting for the row, reads the
    place once the claim commits (one statement's snapshot, taken before the wait, would
    not see it, and neither would start it)."""
    cargs, cparams = store.engine.dialect.create_connect_args(store.engine.url)
    with (
        psycopg.connect(*cargs, **cparams) as claim,
        psycopg.connect(*cargs, **cparams, autocommit=True) as watcher,
    ):
        claim.execute("UPDATE eve_sessions SET next_turn = next_turn + 1 WHERE id = 'ses_a'")
        claim.execute(
            "INSERT INTO eve_accepted (session_id, turn, kind, state, workflow_id, reruns, "
            "accepted_at) VALUES ('ses_a', 1, 'turn', 'accepted', %s, 0, 0)",
            (NEXT,),
        )
        ended: list[Any] = []

        def end() -> None:
            ended.extend(store.append_events("ses_a", 0, _rows(1), [_end(version)]))

        ending = threading.Thread(target=end)
        ending.start()
        _wait_for_a_lock_wait(watcher)
        claim.commit()
        ending.join()
    [place] = ended
    assert isinstance(place, Place) and place.workflow_id == NEXT
    assert _states(store) == {ENDING: "done", NEXT: "accepted"}


def _wait_for_a_lock_wait(watcher: psycopg.Connection[Any]) -> None:
    """Until a backend waits for a lock (the end, for the session's row the claim holds)."""
    query = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = watcher.execute(query).fetchone()
        if found is not None and found[0]:
            return
        time.sleep(0.01)
    raise AssertionError("the end never waited for the session's row")


def test_a_save_over_the_row_two_versions_back_is_one_statement(store: SessionStore) -> None:
    """A save on its own (``SessionStore.save_checkpoint``, a body's end on SQLite): the row
    recycled and the session pointed at it at once; a first save still drops and inserts
    (nothing to recycle) after pointing the session at it, in its transaction."""
    seen = own_statements(store.engine)
    store.run(lambda c: write_checkpoint(c, "ses_a", 1, '{"turns":1}'))
    assert [s.split()[0] for s in seen] == ["WITH", "DELETE", "INSERT"]
    store.run(lambda c: write_checkpoint(c, "ses_a", 2, '{"turns":2}'))
    seen.clear()
    store.run(lambda c: write_checkpoint(c, "ses_a", 3, '{"turns":3}'))
    assert [s.split()[0] for s in seen] == ["WITH"]
    assert store.load_checkpoint("ses_a") == '{"turns":3}'
    assert store.checkpoint_at("ses_a", 2) == '{"turns":2}'


def test_a_user_who_cannot_make_the_function_ends_turns_in_a_transaction(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A database user with rights on eve's tables and not to create in its schema (the
    function dropped, as on a database an eve before it made): the store says so once and
    ends each body in a transaction, as before the function."""
    role = f"eve_limited_{time.time_ns()}"
    admin = sa.create_engine(postgres_url)
    with admin.begin() as c:
        c.exec_driver_sql(f"DROP FUNCTION {NAME}")
        c.exec_driver_sql(f"CREATE ROLE {role} LOGIN")
        c.exec_driver_sql(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
        )
    admin.dispose()
    limited = sa.make_url(postgres_url).set(username=role).render_as_string(hide_password=False)
    with caplog.at_level(logging.WARNING, logger="eve.sessions"):
        store = SessionStore(limited)
    try:
        assert not store.ends_in_one_call
        assert f"{NAME} could not be made (InsufficientPrivilege)" in caplog.text
        store.create_session("ses_a")
        _accept(store, 0, ENDING)
        _accept(store, 1, NEXT)
        seen = own_statements(store.engine)
        done = store.append_events("ses_a", 0, _rows(1), [_end(version=1)])
        assert isinstance(done[0], Place) and done[0].workflow_id == NEXT
        assert not any(NAME in statement for statement in seen)
        assert store.load_checkpoint("ses_a") == '{"turns":1}'
        assert _states(store) == {ENDING: "done", NEXT: "accepted"}
    finally:
        store.close()
