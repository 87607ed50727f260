"""A step's record is not waited for: what the turn emits next commits with it, and the
turn waits for it before its next record's work, a person asked, and its end."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import sqlalchemy as sa

from eve.context.active import EveContext
from eve.execution.recording import RecordKind
from eve.sessions.compute_gate import ComputeGate
from eve.sessions.durable_steps import DurableRecorder
from eve.sessions.event_log import EventLog
from eve.sessions.step_records import add_record, read_records
from eve.sessions.store import SessionStore, TurnProgress
from eve.sessions.turn_events import TurnEvents
from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_approvals import request_of
from tests.sessions.test_turn_transactions import committed, having


def test_a_steps_completion_and_the_next_steps_start_commit_with_its_record(
    make_app: AppFactory,
) -> None:
    """Three steps, each step's record committed with its ``step.completed`` and the next
    ``step.started``: no commit of its own.

    How many commits the events take is not counted: the writer gathers what comes within
    ``COALESCE_SECONDS`` (10 ms), so a step slower than that (a loaded machine) commits its
    first events before its record comes, and a step made 50 ms slower took six commits
    where a quick one takes four."""
    root = scripted_app(make_app, [call("leak"), call("leak"), say("done")], tools=("leak",))
    server = InProcessServer(root).start()
    with committed() as transactions:
        try:
            server.wait_for(server.create("first"), count("session.waiting"))
        finally:
            server.stop()
    recorded = having(transactions, "INSERT INTO eve_step_records")
    assert len(recorded) == 3
    for step, tx in enumerate(recorded):
        assert "event step.completed" in tx, (step, tx)
        if step < 2:
            assert "event step.started" in tx, (step, tx)


@contextmanager
def _commits() -> Iterator[list[str]]:
    """The tables written by each commit in this process meanwhile, in commit order."""
    done: list[str] = []
    open_: dict[int, set[str]] = {}
    lock = threading.Lock()

    def statement(conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        if sql.startswith("INSERT INTO "):
            with lock:
                open_.setdefault(id(conn), set()).add(sql.split()[2])

    def commit(conn: Any) -> None:
        with lock:
            done.extend(sorted(open_.pop(id(conn), set())))

    hooks: dict[str, Callable[..., None]] = {
        "before_cursor_execute": statement,
        "commit": commit,
    }
    for name, hook in hooks.items():
        sa.event.listen(sa.engine.Engine, name, hook)
    try:
        yield done
    finally:
        for name, hook in hooks.items():
            sa.event.remove(sa.engine.Engine, name, hook)


def test_a_person_is_asked_only_once_the_steps_record_committed(make_app: AppFactory) -> None:
    """A parked turn replays from its records: the one before the question is stored
    before the question is."""
    root = scripted_app(make_app, [call("ship", item="anvil"), say("shipped")], tools=("ship",))
    server = InProcessServer(root).start()
    try:
        with _commits() as commits:
            session = server.create("ship it")
            request = request_of(server.wait_for(session, count("turn.waiting")))
        server.answer(session, request["request_id"], "approve")
        server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    assert commits.index("eve_step_records") < commits.index("eve_input_requests"), commits


VALUE: RecordKind[dict[str, str]] = RecordKind(dict[str, str], "a test value")


async def test_a_record_another_run_stored_first_is_kept_and_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two runs of one workflow: the record stored first stays (a replay reads it); the run
    that went on from its own value says so."""
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    store.create_session("ses_x")
    # outside a workflow the records are the empty workflow id's
    store.run(lambda c: add_record(c, "", "step:0", '{"first":"run"}'))
    progress = TurnProgress(last_body_seq=-1, attempts={})
    events = TurnEvents(EventLog(store).writer("ses_x"), workflow_id="w", progress=progress)
    recorder = DurableRecorder(events, EveContext(session_id="ses_x"), gate=ComputeGate(1))

    async def produce() -> dict[str, str]:
        return {"second": "run"}

    with caplog.at_level(logging.WARNING, logger="eve.sessions"):
        value = await recorder.record("step:0", produce, VALUE)
        assert value == {"second": "run"}  # not waited for: the turn goes on with its own
        await events.flush()
    assert progress.records["step:0"] == '{"first":"run"}'
    assert msgspec.json.decode(store.run(lambda c: read_records(c, ""))["step:0"]) == {
        "first": "run"
    }
    assert "recorded first by another run" in caplog.text
    store.close()
