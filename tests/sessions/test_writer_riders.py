"""Riders on the event writer: a write that commits with the events before it (a turn's
checkpoint and the end of its place, with its last events; a step's record with its
step's events), never before them, kept and retried with its batch, and dropped with the
events of a body that failed."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.db_retry import patient
from eve.sessions.event_log import EventLog, Pending
from eve.sessions.step_records import add_record, read_records
from eve.sessions.store import EventRow, SessionStore, write_checkpoint
from tests.sessions.test_event_writer_faults import deltas, fail_inserts, logged
from tests.sessions.test_step_events import step_events
from tests.sessions.test_turn_transactions import committed, having


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    made = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    made.create_session("ses_x")
    return made


async def test_a_rider_commits_with_the_events_added_after_it(store: SessionStore) -> None:
    writer = EventLog(store).writer("ses_x")
    made = await step_events(3)
    writer.add(Pending(event=made[0]))

    def save(c: Connection) -> str:
        write_checkpoint(c, "ses_x", 1, '{"turns": 1}', "ses_x:turn-0")
        return "saved"

    with committed() as transactions:
        done = writer.attach(save, workflow_id="ses_x:turn-0")
        for event in made[1:]:
            writer.add(Pending(event=event))
        await writer.flush()
    assert done.result() == "saved"
    assert deltas(logged(store)) == ["0", "1", "2"]
    # one transaction: the events, then the rider's save
    [tx] = having(transactions, "INSERT")
    [events] = [i for i, s in enumerate(tx) if s.startswith("INSERT INTO eve_events")]
    [saved] = [i for i, s in enumerate(tx) if s.startswith("INSERT INTO eve_checkpoints")]
    assert events < saved
    assert store.load_checkpoint("ses_x") == '{"turns": 1}'
    store.close()


async def test_a_rider_alone_commits_on_its_own(store: SessionStore) -> None:
    writer = EventLog(store).writer("ses_x")
    done = writer.attach(lambda c: c.execute(sa.text("select 7")).scalar(), workflow_id="w")
    await writer.flush()
    assert done.result() == 7
    assert logged(store) == []
    store.close()


async def test_a_rider_is_kept_with_its_batch_when_the_write_fails(store: SessionStore) -> None:
    store.retry_seconds = 0  # no waiting: the write fails at once
    writer = EventLog(store).writer("ses_x")
    ran: list[int] = []
    made = await step_events(2)
    fail_inserts(store, 1)
    writer.add(Pending(event=made[0]))
    done = writer.attach(lambda c: ran.append(1), workflow_id="w")
    with pytest.raises(sa.exc.OperationalError):
        await writer.flush()
    # rolled back with its events, and not resolved: it has not committed
    assert ran == [] and not done.done()
    writer.add(Pending(event=made[1]))
    await writer.flush()
    assert ran == [1] and done.done()
    assert deltas(logged(store)) == ["0", "1"]
    store.close()


async def test_a_rider_runs_again_when_another_process_took_the_index(
    store: SessionStore,
) -> None:
    writer = EventLog(store).writer("ses_x")
    writer.next_index = 0
    # another worker wrote index 0 meanwhile: the batch (and its rider) is written after it
    other = EventRow(workflow_id=None, body_seq=None, step_key=None, attempt=None, payload="{}")
    store.append_events("ses_x", 0, [other])
    ran: list[int] = []
    writer.add(Pending(event=(await step_events(1))[0]))
    done = writer.attach(lambda c: ran.append(1) or len(ran), workflow_id="w")
    await writer.flush()
    # it runs after the rows: the refused try stopped before it, the next one committed it
    assert done.result() == 1
    assert deltas(logged(store)[1:]) == ["0"]
    store.close()


async def test_a_failed_body_drops_its_riders_with_its_events(store: SessionStore) -> None:
    store.retry_seconds = 0
    writer = EventLog(store).writer("ses_x")
    ran: list[str] = []
    fail_inserts(store, 1)
    writer.add(Pending(event=(await step_events(1))[0], workflow_id="mine"))
    mine = writer.attach(lambda c: ran.append("mine"), workflow_id="mine")
    with pytest.raises(sa.exc.OperationalError):
        await writer.flush()
    # the body whose end could not be written fails: its replay writes it all again, and
    # its place must not be done before its outcome is in the log
    writer.discard("mine")
    assert mine.cancelled()
    theirs = writer.attach(lambda c: ran.append("theirs"), workflow_id="theirs")
    await writer.flush()
    assert ran == ["theirs"] and theirs.result() is None
    assert logged(store) == []
    store.close()


def _record(c: Connection) -> str:
    return add_record(c, "ses_x:turn-0", "step:0", '{"value": 1}')


async def test_a_durable_rider_returns_once_it_committed_with_the_events_before_it(
    store: SessionStore,
) -> None:
    # a step's record: in the transaction of the step's events, not one of its own
    writer = EventLog(store).writer("ses_x")
    with committed() as transactions:
        for event in await step_events(2):
            writer.add(Pending(event=event))
        stored = await writer.durable(_record, workflow_id="ses_x:turn-0")
    assert stored == '{"value": 1}'
    [tx] = having(transactions, "INSERT")
    assert [s.split(" (")[0] for s in tx if s.startswith("INSERT")] == [
        "INSERT INTO eve_events",
        "INSERT INTO eve_step_records",
    ]
    assert store.run(lambda c: read_records(c, "ses_x:turn-0")) == {"step:0": '{"value": 1}'}
    store.close()


async def test_a_durable_rider_waits_for_its_own_commit_not_for_later_events(
    store: SessionStore,
) -> None:
    # the calls of a batch run at once: one's record must not wait until the others stop
    # emitting (a flush would: here they never stop until told to)
    writer = EventLog(store).writer("ses_x")
    made = await step_events(1)
    written: list[int] = []
    going = [True]

    def more(session_id: str, high: int, payloads: list[str]) -> None:
        written.append(high)
        if going[0]:
            writer.add(Pending(event=made[0]))  # another step's event, after every commit

    writer.on_written = more
    writer.add(Pending(event=made[0]))
    await writer.durable(_record, workflow_id="ses_x:turn-0")
    assert len(written) <= 2  # its own batch (and one begun meanwhile), not the rest
    going[0] = False
    await writer.flush()
    store.close()


async def test_a_durable_rider_whose_write_failed_raises_and_is_written_later(
    store: SessionStore,
) -> None:
    store.retry_seconds = 0  # outside a body: the write fails at once, as flush's does
    writer = EventLog(store).writer("ses_x")
    fail_inserts(store, 1)
    writer.add(Pending(event=(await step_events(1))[0]))
    with pytest.raises(sa.exc.OperationalError):
        await writer.durable(_record, workflow_id="ses_x:turn-0")
    assert store.run(lambda c: read_records(c, "ses_x:turn-0")) == {}
    # kept with its batch: the next drain writes both
    await writer.flush()
    assert store.run(lambda c: read_records(c, "ses_x:turn-0")) == {"step:0": '{"value": 1}'}
    assert deltas(logged(store)) == ["0"]
    store.close()


async def test_a_durable_rider_in_a_body_waits_out_a_failed_drain(store: SessionStore) -> None:
    store.retry_seconds = 0
    writer = EventLog(store).writer("ses_x")
    # the drain fails outside the body's patience (a drain another caller began) ...
    fail_inserts(store, 1)
    writer.add(Pending(event=(await step_events(1))[0]))
    with pytest.raises(sa.exc.OperationalError):
        await writer.flush()
    # ... and the body's record, attached to the kept batch, starts it again and waits
    with patient():
        stored = await writer.durable(_record, workflow_id="ses_x:turn-0")
    assert stored == '{"value": 1}'
    assert deltas(logged(store)) == ["0"]
    store.close()
