"""A durable step's record names its format; one of another format is refused by name.
Records live in eve's table; a turn an older eve recorded as DBOS steps still replays."""

from __future__ import annotations

import time

import msgspec
import pytest
from dbos import DBOS

from eve._usage import TokenUsage
from eve.errors import StepRecordCorrupt
from eve.execution.checkpoints import PARTS, RanAll
from eve.execution.response import ModelResponse
from eve.sessions import turn_workflow
from eve.sessions.checkpoint import STEP_RECORD_VERSION, StepCheckpoint
from eve.sessions.durable_steps import decode_step_record
from eve.sessions.retention import prune_workflows
from eve.sessions.settings import resolve_settings
from eve.sessions.step_records import add_record
from eve.sessions.store import SessionStore, StartingCheckpoint, TurnProgress
from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.own_statements import own_statements
from tests.sessions.records import step_records
from tests.sessions.test_approvals import request_of


def _record(version: int | None) -> bytes:
    response = ModelResponse(finish_reason="end_turn", usage=TokenUsage())
    part = msgspec.json.encode(RanAll(response=response))
    fields = {"value": msgspec.Raw(part), "state": {}}
    record = StepCheckpoint(**fields, version=version) if version else StepCheckpoint(**fields)
    return msgspec.json.encode(record)


def test_a_record_of_this_format_reads_back() -> None:
    checkpoint, part = decode_step_record(
        _record(STEP_RECORD_VERSION), PARTS.decoder, workflow_id="ses_1:turn-0", step="step:0"
    )
    assert isinstance(part, RanAll) and checkpoint.version == STEP_RECORD_VERSION


def test_a_record_an_older_eve_wrote_is_refused_with_the_named_error() -> None:
    # an older eve's record has no format (1): its parts ask one call at a time and hold
    # the session's once() approvals, which the turn's state now holds
    legacy = b'{"value":{"stop":"ran-all"},"state":{},"approved_once":[],"attempt":0}'
    for record in (_record(None), legacy):
        with pytest.raises(StepRecordCorrupt) as refused:
            decode_step_record(record, PARTS.decoder, workflow_id="ses_1:turn-0", step="step:0")
        assert (refused.value.workflow_id, refused.value.step) == ("ses_1:turn-0", "step:0")
        assert f"format 1; this eve reads {STEP_RECORD_VERSION}" in str(refused.value)
        assert "reset the session" in str(refused.value)


def test_an_ordinary_turn_records_its_steps_in_eves_table_and_none_as_a_dbos_step(
    make_app: AppFactory,
) -> None:
    root = scripted_app(make_app, [call("leak"), say("done")], tools=("leak",))
    server = InProcessServer(root).start()
    try:
        session = server.create("count")
        server.wait_for(session, count("session.waiting"))
        dbos_steps = DBOS.list_workflow_steps(f"{session}:turn-0")
    finally:
        server.stop()
    assert dbos_steps == []
    records = step_records(root, f"{session}:turn-0")
    assert [r["function_name"] for r in records] == ["step:0", "step:1"]
    # each a record of this format, with the state after its step
    [first, _] = [msgspec.json.decode(r["output"]) for r in records]
    assert first["version"] == STEP_RECORD_VERSION and first["state"]["state:mine"] == 1


def test_a_turn_an_older_eve_parked_replays_its_dbos_step_records_after_the_upgrade(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older eve recorded a turn's load and steps as DBOS steps; parked on an approval
    across the upgrade, the turn goes on from them: its model step is not asked again (no
    event of a second attempt) and the tool runs once."""
    root = scripted_app(make_app, [call("ship", item="anvil"), say("shipped")], tools=("ship",))

    async def as_an_older_eve(progress: TurnProgress, workflow_id: str) -> bool:
        return True

    with monkeypatch.context() as older:
        older.setattr(turn_workflow, "legacy_steps", as_an_older_eve)
        server = InProcessServer(root).start()
        try:
            session = server.create("ship it")
            request = request_of(server.wait_for(session, count("turn.waiting")))
            names = [s["function_name"] for s in DBOS.list_workflow_steps(f"{session}:turn-0")]
        finally:
            server.stop()
    assert names[:2] == ["checkpoint.load", "step:0"]
    assert step_records(root, f"{session}:turn-0") == []

    server = InProcessServer(root).start()
    try:
        server.answer(session, request["request_id"], "approve")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    assert not any(e["data"].get("attempt") for e in events), "a step ran again"
    said = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert said == ["shipped"]
    assert (root / "shipped.log").read_text() == "anvil\n"


def test_prune_deletes_the_step_records_of_the_workflows_it_deletes_and_keeps_a_parked_ones(
    make_app: AppFactory,
) -> None:
    script = [call("ship", item="anvil"), say("shipped"), call("ship", item="bell")]
    root = scripted_app(make_app, [*script, say("shipped")], tools=("ship",))
    server = InProcessServer(root).start()
    try:
        done = server.create("ship it")
        request = request_of(server.wait_for(done, count("turn.waiting")))
        server.answer(done, request["request_id"], "approve")
        server.wait_for(done, count("session.waiting"))
        parked = server.create("ship it")
        server.wait_for(parked, count("turn.waiting"))
    finally:
        server.stop()
    settings = resolve_settings(root, env={})
    later = time.time() + 3600
    recorded = len(step_records(root, f"{done}:turn-0"))
    assert recorded >= 2  # its model's two answers, at least
    dry = prune_workflows(settings, older_than=60, dry_run=True, now=later)
    assert dry.step_records == recorded
    assert len(step_records(root, f"{done}:turn-0")) == recorded, "a dry run deleted"
    pruned = prune_workflows(settings, older_than=60, dry_run=False, now=later)
    assert pruned.step_records == recorded and pruned.as_json()["stepRecords"] == recorded
    assert step_records(root, f"{done}:turn-0") == []
    # the parked turn's replay reads its record
    assert [r["function_name"] for r in step_records(root, f"{parked}:turn-0")] == ["step:0"]


def test_a_step_recorded_twice_keeps_the_first_record_and_a_save_names_its_workflow(
    either_store: SessionStore,
) -> None:
    """Two runs of one workflow (a worker taken for dead that still ran): the second record
    of a step is not stored, and both go on from the first. A replay finds its own save
    current and starts from the version before it."""
    store = either_store
    first = store.run(lambda c: add_record(c, "ses_a:turn-0", "step:0", '{"run":1}'))
    second = store.run(lambda c: add_record(c, "ses_a:turn-0", "step:0", '{"run":2}'))
    assert first == second == '{"run":1}'
    store.create_session("ses_a")
    store.save_checkpoint("ses_a", '{"turns":1}', after=0, saved_by="ses_a:turn-0")
    progress = store.turn_progress("ses_a:turn-1", records_of="ses_a:turn-1", checkpoint_of="ses_a")
    assert progress.checkpoint == StartingCheckpoint(version=1, data='{"turns":1}')
    assert progress.records == {}
    replay = store.turn_progress("ses_a:turn-0", records_of="ses_a:turn-0", checkpoint_of="ses_a")
    assert replay.checkpoint == StartingCheckpoint(version=0, data=None)
    assert replay.records == {"step:0": '{"run":1}'}


def test_a_record_added_first_is_not_read_back(either_store: SessionStore) -> None:
    """Only a record another run added first is read; on PostgreSQL every one was, as the
    insert's row count was not kept (-1)."""
    store = either_store
    ran = own_statements(store.engine)
    store.run(lambda c: add_record(c, "ses_b:turn-0", "step:0", '{"run":1}'), atomic=False)
    assert [s.split()[0] for s in ran] == ["INSERT"]
    ran.clear()
    store.run(lambda c: add_record(c, "ses_b:turn-0", "step:0", '{"run":2}'), atomic=False)
    assert [s.split()[0] for s in ran] == ["INSERT", "SELECT"]
