"""The store queries that place a channel's reading in a session's log, on SQLite and on a
real PostgreSQL: the log's end, a turn's first event, the engine's open requests, who asked
a request, and the latest turn that started."""

from __future__ import annotations

from eve.channels.log_index import (
    OpenRequest,
    askers,
    first_index,
    latest_turn_workflow,
    log_end,
    open_requests,
)
from eve.sessions.store import EventRow, SessionStore
from eve.sessions.turn_workflow import turn_workflow_id
from tests.sessions.conftest import either_store, postgres_schema, postgres_server, postgres_url

__all__ = [
    "either_store",
    "postgres_schema",
    "postgres_server",
    "postgres_url",
]  # fixtures, used by name

SESSION = "ses_a_1"
#: a workflow id that LIKE would take for one of SESSION's turns, were ``_`` not escaped
LOOKALIKE = "sesXaX1:turn-9"


def row(workflow: str | None) -> EventRow:
    return EventRow(workflow_id=workflow, body_seq=None, step_key=None, attempt=None, payload="{}")


def test_the_log_positions_come_from_the_store_indexes(either_store: SessionStore) -> None:
    store = either_store
    turn_0, turn_1 = turn_workflow_id(SESSION, 0), turn_workflow_id(SESSION, 1)
    task = f"{turn_1}:task-x"
    store.create_session(SESSION)
    store.append_events(SESSION, 0, [row(None), row(turn_0), row(turn_0)])
    store.append_events(SESSION, 3, [row(None), row(turn_1), row(task), row(LOOKALIKE)])
    store.add_input_request("inp_b", SESSION, task)
    store.add_input_request("inp_a", SESSION, turn_1)
    store.add_input_request("inp_old", SESSION, turn_0)
    store.resolve_input_request("inp_old")
    run = store.run
    assert run(lambda c: log_end(c, SESSION)) == 7
    assert run(lambda c: log_end(c, "ses_none")) == 0
    assert run(lambda c: first_index(c, SESSION, [turn_1])) == 4
    assert run(lambda c: first_index(c, SESSION, [task, turn_0])) == 1
    assert run(lambda c: first_index(c, SESSION, [turn_workflow_id(SESSION, 2)])) is None
    assert run(lambda c: first_index(c, SESSION, [])) is None
    assert run(lambda c: open_requests(c, SESSION)) == [
        OpenRequest(request_id="inp_a", workflow_id=turn_1),
        OpenRequest(request_id="inp_b", workflow_id=task),
    ]
    assert run(lambda c: askers(c, SESSION, ["inp_old", "inp_zz"])) == [turn_0]
    # the last event's workflow only looks like a turn's to an unescaped pattern
    assert run(lambda c: latest_turn_workflow(c, SESSION)) == task
