"""Retention: pruning deletes DBOS's records of old finished workflows and nothing a session
still needs; a parked turn and a finished session both go on after it."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from eve.sessions import retention
from eve.sessions.retention import prune_workflows
from eve.sessions.settings import SESSIONS_DIR, resolve_settings
from tests.conftest import AppFactory
from tests.sessions.apps import TOOLS, call, say, scripted_app
from tests.sessions.harness import Server, count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_approvals import request_of
from tests.sessions.test_tasks import app as tasks_app
from tests.sessions.workflow_rows import statuses_when_ended

#: a prune that sees every workflow as an hour old
LATER = 3600.0


def _rows(root: Path, table: str, session_id: str) -> int:
    with sqlite3.connect(root / SESSIONS_DIR / "dbos.sqlite") as c:
        (n,) = c.execute(
            f"SELECT count(*) FROM {table} WHERE workflow_uuid LIKE ?",
            (f"{session_id}:%",),
        ).fetchone()
    return int(n)


def test_prune_deletes_old_finished_workflows_and_keeps_what_sessions_need(
    make_app: AppFactory,
) -> None:
    script = [call("ship", item="anvil"), say("shipped"), say("again")]
    root = scripted_app(make_app, script, tools=("ship",))
    settings = resolve_settings(root, env={})
    server = InProcessServer(root).start()
    try:
        done = server.create("ship it")
        server.answer(
            done, request_of(server.wait_for(done, count("turn.waiting")))["request_id"], "approve"
        )
        server.wait_for(done, count("session.waiting"))
        statuses_when_ended(root / SESSIONS_DIR / "dbos.sqlite", f"{done}:%")
        parked = server.create("ship it")
        request = request_of(server.wait_for(parked, count("turn.waiting")))
        logged = len(server.events(done))
        assert _rows(root, "operation_outputs", done) > 0

        # just finished: nothing is older than a minute yet
        young = prune_workflows(settings, older_than=60, dry_run=False)
        assert young.total == 0 and _rows(root, "workflow_status", done) == 1

        dry = prune_workflows(settings, older_than=60, dry_run=True, now=time.time() + LATER)
        assert dry.deleted == {"SUCCESS": 1} and dry.dry_run
        assert _rows(root, "workflow_status", done) == 1, "a dry run deleted something"

        pruned = prune_workflows(settings, older_than=60, dry_run=False, now=time.time() + LATER)
        assert pruned.deleted == {"SUCCESS": 1}
        for table in ("workflow_status", "workflow_input", "operation_outputs"):
            assert _rows(root, table, done) == 0, table
        # the parked turn is untouched, and the finished session's history is eve's
        assert _rows(root, "workflow_status", parked) == 1
        assert len(server.events(done)) == logged

        server.answer(parked, request["request_id"], "approve")
        replies = server.wait_for(parked, count("session.waiting"))
        assert [e["data"]["message"] for e in replies if e["type"] == "message.completed"] == [
            "shipped"
        ]
        assert server.send(done, "once more").status_code == 202
        later = server.wait_for(done, count("session.waiting", 2))
        said = [e["data"]["message"] for e in later if e["type"] == "message.completed"]
        assert said == ["shipped", "again"]  # the script went on from the stored history
        assert server.get(f"/session/{done}").json()["turns"] == 2
    finally:
        server.stop()


def test_prune_of_an_app_that_never_ran_deletes_nothing(make_app: AppFactory) -> None:
    root = make_app()
    report = prune_workflows(resolve_settings(root, env={}), older_than=0, dry_run=False)
    assert report.total == 0 and report.kept == 0


def test_eve_serve_prunes_at_start_when_eve_retention_is_set(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("one"), say("two")])
    server = Server(root).start()
    try:
        session = server.create("hello")
        server.wait_for(session, count("session.waiting"))
        server.stop()
        assert _rows(root, "workflow_status", session) == 1
        server.env = {"EVE_RETENTION": "0s"}
        server.start()
        deadline = time.monotonic() + 30
        while _rows(root, "workflow_status", session) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _rows(root, "workflow_status", session) == 0, "worker 0 never pruned"
        assert server.send(session, "again").status_code == 202
        events = server.wait_for(session, count("session.waiting", 2))
    finally:
        log = server.stop()
    said = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert said == ["one", "two"], log


QUICK = """
    from eve.tools import WorkflowContext, define_workflow_tool

    async def quick(data, ctx: WorkflowContext):
        return {"ok": True}

    default = define_workflow_tool(description="Finish at once.", run=quick)
"""


def test_a_finished_task_of_a_parked_turn_is_kept_until_the_turn_ends(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "BATCH", 1)  # page by page
    files = {"agent/tools/quick.py": QUICK, "agent/tools/ship.py": TOOLS["ship"]}
    root = tasks_app(make_app, files, [call("quick"), call("ship", item="anvil"), say("done")])
    settings = resolve_settings(root, env={})
    server = InProcessServer(root).start()
    try:
        session = server.create("go")
        request = request_of(server.wait_for(session, count("turn.waiting")))
        later = time.time() + LATER
        parked = prune_workflows(settings, older_than=60, dry_run=False, now=later)
        # the task finished, but a replay of its parked turn asks DBOS for its result
        assert (parked.deleted, parked.kept) == ({}, 1)
        server.answer(session, request["request_id"], "approve")
        server.wait_for(session, count("session.waiting"))
        # the turn's row says SUCCESS a moment after its last event
        statuses_when_ended(root / SESSIONS_DIR / "dbos.sqlite", f"{session}:%")
        dry = prune_workflows(settings, older_than=60, dry_run=True, now=later)
        ended = prune_workflows(settings, older_than=60, dry_run=False, now=later)
    finally:
        server.stop()
    assert dry.deleted == ended.deleted == {"SUCCESS": 2} and ended.kept == 0
    assert _rows(root, "workflow_status", session) == 0
