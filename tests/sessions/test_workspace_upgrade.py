"""A turn parked by an eve from before the workspace notes (``eve_workspace_refs``): its
step records name trees, no note does, and retention's sweep must keep them for its replay
(``eve.sessions.workspace_backfill``)."""

from __future__ import annotations

import time

import sqlalchemy as sa

from eve.sessions.retention import prune_workflows
from eve.sessions.settings import resolve_settings
from eve.sessions.store import SessionStore
from eve.sessions.tables import workspace_refs
from eve.sessions.workspace_sweep import SweepReport
from tests.conftest import AppFactory
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_approvals import request_of
from tests.sessions.test_workspace_sweep import (
    LATER,
    _assert_the_parked_turns_trees_are_kept,
    _sandboxed_app,
)


def test_a_turn_parked_before_the_notes_keeps_the_trees_its_records_name(
    make_app: AppFactory,
) -> None:
    root = _sandboxed_app(make_app)
    settings = resolve_settings(root, env={})
    server = InProcessServer(root, env={}).start()
    try:
        parked = server.create("write")
        waiting = request_of(server.wait_for(parked, count("turn.waiting")))
        store = SessionStore(settings.eve_url)
        try:
            # the state an older eve left: records naming trees, and no note of them
            assert store.run(lambda c: c.execute(sa.delete(workspace_refs)).rowcount) > 0
            later = time.time() + LATER
            dry = prune_workflows(settings, older_than=60, dry_run=True, now=later)
            pruned = prune_workflows(settings, older_than=60, dry_run=False, now=later)
            assert dry.workspace == pruned.workspace == SweepReport()
            _assert_the_parked_turns_trees_are_kept(settings, store)
            noted = store.run(lambda c: c.execute(sa.select(workspace_refs.c.tree_id)).all())
            assert noted, "the records' trees were not noted for the next sweeps"
        finally:
            store.close()
        server.answer(parked, waiting["request_id"], "approve")
        events = server.wait_for(parked, count("session.waiting"))
    finally:
        server.stop()
    said = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert said == ["shipped"]
