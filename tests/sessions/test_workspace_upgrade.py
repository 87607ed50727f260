"""A turn parked by an eve from before the workspace notes (``eve_workspace_refs``): its
step records name trees, no note does, and retention's sweep must keep them for its replay
(``eve.sessions.workspace_backfill``)."""

from __future__ import annotations

import time

import sqlalchemy as sa

from eve.sessions.retention import prune_workflows
from eve.sessions.store import SessionStore
from eve.sessions.tables import workspace_refs
from eve.sessions.workspace_sweep import SweepReport
from tests.conftest import AppFactory
from tests.sessions.test_workspace_sweep import (
    LATER,
    _assert_the_parked_turns_trees_are_kept,
    approve,
    park,
    sandboxed_server,
)


def test_a_turn_parked_before_the_notes_keeps_the_trees_its_records_name(
    make_app: AppFactory,
) -> None:
    with sandboxed_server(make_app) as (server, settings):
        parked, waiting = park(server)
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
        # the turn goes on from the trees its records name
        assert approve(server, parked, waiting) == ["shipped"]
