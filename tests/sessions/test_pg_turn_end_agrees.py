"""A body's end on PostgreSQL is written twice: as one call of ``eve_end_turn_v1``
(``pg_turn_end.py``), and as the transaction of ``accepted.PlaceEnds`` that SQLite runs and
that PostgreSQL falls back to when the function cannot be made (a database user without the
right to create it). Both stay: this checks they agree, the same ends leaving the same rows
and answering the same."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from eve.sessions.accepted import Place, PlaceEnds, accept, mark_started
from eve.sessions.step_records import NewRecord
from eve.sessions.store import CheckpointSave, EventRow, SessionStore
from eve.sessions.tables import accepted_places, checkpoints, events, sessions, step_records
from tests.sessions.session_rows import session_rows


@pytest.fixture
def store(postgres_url: str) -> Iterator[SessionStore]:
    opened = SessionStore(postgres_url)
    assert opened.ends_in_one_call, "the function is made where the user may create it"
    yield opened
    opened.close()


class Ends:
    """One session's body ends, said the same way whichever way the store writes them."""

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self.store, self.session_id = store, session_id
        store.create_session(session_id)

    def workflow(self, turn: int) -> str:
        return f"{self.session_id}:turn-{turn}"

    def accept(self, turn: int, *, started: bool = False) -> None:
        workflow_id, session_id = self.workflow(turn), self.session_id
        said = {"text": f"message {turn}"}
        self.store.run(
            lambda c: accept(
                c,
                session_id=session_id,
                turn=turn,
                kind="turn",
                workflow_id=workflow_id,
                turn_input=said,
            )
        )
        if started:
            self.store.run(lambda c: mark_started(c, workflow_id))

    def end(
        self,
        turn: int,
        *,
        at: int,
        rows: int = 1,
        records: tuple[tuple[str, str], ...] = (),
        version: int | None = None,
    ) -> list[Any]:
        """End ``turn``'s body with ``rows`` events from index ``at``, its records and its
        checkpoint's save (``version``); what the store answered, places as their turns."""
        workflow_id = self.workflow(turn)
        save = None
        if version is not None:
            data = f'{{"turns":{version}}}'
            save = CheckpointSave(
                session_id=self.session_id, version=version, data=data, saved_by=workflow_id
            )
        made = [NewRecord(workflow_id=workflow_id, key=key, record=r) for key, r in records]
        ends = PlaceEnds(session_id=self.session_id, workflow_id=workflow_id, save=save)
        row = EventRow(
            workflow_id=workflow_id, body_seq=None, step_key="step:2", attempt=0, payload="{}"
        )
        done = self.store.append_events(self.session_id, at, [row] * rows, [*made, ends])
        return [("place", d.turn) if isinstance(d, Place) else d for d in done]


def _scenario_next_place(ends: Ends) -> list[Any]:
    ends.accept(0)
    ends.accept(1)
    records = (("step:1:call:0", '{"r":2}'), ("step:2", '{"r":3}'))
    return ends.end(0, at=0, rows=2, records=records, version=1)


def _scenario_saves_recycled_and_replayed(ends: Ends) -> list[Any]:
    answers = []
    for turn, version in enumerate((1, 2, 3)):
        ends.accept(turn)
        answers.append(ends.end(turn, at=turn, version=version))
    ends.accept(3)
    answers.append(ends.end(3, at=3, version=3))  # a replayed save of version 3
    return answers


def _scenario_record_made_first(ends: Ends) -> list[Any]:
    ends.accept(0)
    ends.store.append_events(
        ends.session_id, 0, [], [NewRecord(workflow_id=ends.workflow(0), key="s", record="1")]
    )
    return ends.end(0, at=0, records=(("s", "2"),))


def _scenario_next_started_already(ends: Ends) -> list[Any]:
    ends.accept(0)
    ends.accept(1, started=True)
    return ends.end(0, at=0, version=1)


def _scenario_nothing_but_the_end(ends: Ends) -> list[Any]:
    ends.accept(0)
    ends.accept(1)
    return ends.end(0, at=0, rows=0)


def _scenario_taken_index(ends: Ends) -> list[Any]:
    ends.accept(0)
    ends.end(0, at=1, rows=1)  # not the end of turn 0's body: index 1 taken
    ends.accept(1)
    with pytest.raises(sa.exc.IntegrityError):
        ends.end(1, at=0, rows=2, records=(("step:2", "r"),), version=1)
    return []


SCENARIOS: dict[str, Callable[[Ends], list[Any]]] = {
    "the next place": _scenario_next_place,
    "saves recycled and replayed": _scenario_saves_recycled_and_replayed,
    "a record made first": _scenario_record_made_first,
    "the next started already": _scenario_next_started_already,
    "nothing but the end": _scenario_nothing_but_the_end,
    "a taken index": _scenario_taken_index,
}


def _rows(store: SessionStore, session_id: str) -> dict[str, list[dict[str, Any]]]:
    """What the session's ends wrote in each table, its id as ``S`` and without clocks."""
    of_session = {
        "sessions": sa.select(sessions).where(sessions.c.id == session_id),
        "events": sa.select(events).where(events.c.session_id == session_id),
        "checkpoints": sa.select(checkpoints).where(checkpoints.c.session_id == session_id),
        "accepted": sa.select(accepted_places).where(accepted_places.c.session_id == session_id),
        "records": sa.select(step_records).where(
            step_records.c.workflow_id.startswith(f"{session_id}:")
        ),
    }

    return session_rows(store, session_id, of_session)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_function_and_the_transaction_write_the_same_rows(
    store: SessionStore, scenario: str
) -> None:
    run = SCENARIOS[scenario]
    by_function = run(Ends(store, "ses_fn"))
    store.ends_in_one_call = False  # as a store whose user cannot make the function
    by_transaction = run(Ends(store, "ses_tx"))
    assert by_function == by_transaction
    assert _rows(store, "ses_fn") == _rows(store, "ses_tx")
    assert _rows(store, "ses_fn")["accepted"], "the scenario wrote something"
