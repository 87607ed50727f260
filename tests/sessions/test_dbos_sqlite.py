"""DBOS's writes around a workflow on SQLite, compiled once (``eve/sessions/dbos_sqlite.py``):
what they store is what DBOS reads back, and the end keeps DBOS's ownership rule; and its
newest-version query, compiled once, answers as DBOS's did."""

from __future__ import annotations

import dbos._workflow_commands as dbos_jobs
import pytest
from dbos import DBOS, WorkflowHandle
from dbos._dbos import _get_dbos_instance
from dbos._utils import GlobalParams

from eve.sessions.dbos_sqlite import _LATEST, _PREPARED
from eve.sessions.turn_workflow import turn_workflow_id
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer


def test_a_turns_start_and_end_are_prepared_and_read_back_by_dbos(make_app: AppFactory) -> None:
    server = InProcessServer(scripted_app(make_app, [say("hello")])).start()
    try:
        session = server.create("hi")
        server.wait_for(session, count("session.waiting"))
        workflow_id = turn_workflow_id(session, 0)
        handle: WorkflowHandle[str] = DBOS.retrieve_workflow(workflow_id)
        # DBOS writes the workflow's end after its body's last events: wait for it first
        assert handle.get_result() == "complete"  # the output, as DBOS decodes it
        assert handle.get_status().status == "SUCCESS"
        sys_db = _get_dbos_instance()._sys_db
        prepared = {name for name, _ in _PREPARED[sys_db]}
        assert {"insert_workflow_status", "insert_workflow_input"} <= prepared
        assert {"eve_update_outcome_owned", "upsert_workflow_output"} <= prepared
        # an end that is not this execution's (the row is no longer PENDING) writes nothing
        assert not sys_db.update_workflow_outcome(
            workflow_id, "ERROR", error="late", owner_xid="another-execution"
        )
        assert handle.get_status().status == "SUCCESS"
        assert handle.get_result() == "complete"
        # the newest-version query, compiled once, still tells this version from another
        assert sys_db._is_latest_version(GlobalParams.app_version)
        assert not sys_db._is_latest_version("an-older-version")
        assert list(_LATEST[sys_db]) == [sys_db.app_name]
    finally:
        server.stop()


@pytest.mark.parametrize(("database", "seconds"), [("sqlite", 30.0), ("postgresql", 1.0)])
def test_dboss_background_jobs_run_rarely_on_sqlite_only(
    make_app: AppFactory, database: str, seconds: float, request: pytest.FixtureRequest
) -> None:
    """On PostgreSQL DBOS holds the jobs' lock in a transaction for the interval, and the
    session is ended after 5 s idle in it: there the interval stays DBOS's second."""
    env = (
        {}
        if database == "sqlite"
        else {"EVE_DATABASE_URL": request.getfixturevalue("postgres_url")}
    )
    server = InProcessServer(scripted_app(make_app, [say("hello")]), env=env).start()
    try:
        assert seconds == dbos_jobs._BACKGROUND_JOBS_INTERVAL_SEC
    finally:
        server.stop()
