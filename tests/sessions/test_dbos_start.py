"""DBOS's start of a workflow as eve narrows it (``eve/sessions/dbos_start.py``): a turn's
start in one statement on PostgreSQL, read back through DBOS's own API; a start that finds
its workflow there runs nothing again; DBOS's checks and its "self" footgun still hold."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from dbos import DBOS, SetWorkflowID, WorkflowHandle
from dbos._dbos import _get_dbos_instance
from dbos._error import DBOSConflictingWorkflowError
from dbos._sys_db import SystemDatabase

from eve.sessions import dbos_start
from eve.sessions.dbos_start import _class_name, _config_name
from eve.sessions.turn_workflow import turn_workflow, turn_workflow_id
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_turns_start_reads_back_through_dbos_and_runs_once(
    make_app: AppFactory, database: str, request: pytest.FixtureRequest
) -> None:
    env = (
        {}
        if database == "sqlite"
        else {"EVE_DATABASE_URL": request.getfixturevalue("postgres_url")}
    )
    server = InProcessServer(scripted_app(make_app, [say("hello")]), env=env).start()
    try:
        session = server.create("hi")
        server.wait_for(session, count("session.waiting"))
        workflow_id = turn_workflow_id(session, 0)
        handle: WorkflowHandle[str] = DBOS.retrieve_workflow(workflow_id)
        # DBOS writes the workflow's end after its body's last events: wait for it first
        assert handle.get_result() == "complete"
        status = handle.get_status()
        assert (status.status, status.name, status.queue_name) == ("SUCCESS", "eve.turn", None)
        [listed] = DBOS.list_workflows(workflow_ids=[workflow_id], load_input=True)
        stored: Any = listed.input
        assert stored is not None
        assert stored["args"][:2] == (session, 0)  # the inputs, as DBOS decodes them
        assert stored["args"][2]["parts"][0]["text"] == "hi"
        sys_db = _get_dbos_instance()._sys_db
        if database == "postgresql":
            prepared = {name for name, _ in sys_db._prepared_statements}
            # one statement for the start; DBOS's two INSERTs never ran
            assert "eve_start_workflow" in prepared
            assert "insert_workflow_status" not in prepared
        # the same id started again (as after a crash) is the workflow there: nothing runs
        again = _on_the_apps_loop(server).call(_start_again, workflow_id, session)
        assert again == "complete"
        assert [e["type"] for e in server.events(session)].count("session.waiting") == 1
        # another function under the id is refused, as DBOS refuses it
        with pytest.raises(DBOSConflictingWorkflowError, match="different function name"):
            _on_the_apps_loop(server).call(_start_other, workflow_id)
    finally:
        server.stop()


def _on_the_apps_loop(server: InProcessServer) -> Any:
    """The portal of the loop the app (and DBOS, launched there) runs on."""
    assert server.http is not None
    return server.http.portal


async def _start_again(workflow_id: str, session: str) -> str:
    with SetWorkflowID(workflow_id):
        handle = await DBOS.start_workflow_async(
            turn_workflow, session, 0, {"parts": [], "principal": {}}
        )
    return await handle.get_result()


@DBOS.workflow(name="tests.other")
async def _other(session_id: str) -> str:
    return session_id


async def _start_other(workflow_id: str) -> None:
    with SetWorkflowID(workflow_id):
        await DBOS.start_workflow_async(_other, "x")


def test_a_start_in_one_statement_stores_the_rows_dboss_transaction_stores(
    make_app: AppFactory, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = InProcessServer(
        scripted_app(make_app, [say("hello")]), env={"EVE_DATABASE_URL": postgres_url}
    ).start()
    try:
        portal = _on_the_apps_loop(server)
        with monkeypatch.context() as dboss:
            dboss.setattr(SystemDatabase, "init_workflow", dbos_start._DBOS_INIT)
            portal.call(_start_plain, "by-dbos")
        portal.call(_start_plain, "by-eve")
        sys_db = _get_dbos_instance()._sys_db
        prepared = {name for name, _ in sys_db._prepared_statements}
        assert {"insert_workflow_status", "eve_start_workflow"} <= prepared  # both ways ran
        for table in ("workflow_status", "workflow_input", "workflow_output"):
            rows = _rows(sys_db.engine, table)
            # the same row but for the id, the times and the start's own token
            assert rows["by-dbos"] == rows["by-eve"], table
    finally:
        server.stop()


async def _start_plain(workflow_id: str) -> None:
    with SetWorkflowID(workflow_id):
        handle = await DBOS.start_workflow_async(_other, "x")
    await handle.get_result()


def _rows(engine: sa.Engine, table: str) -> dict[str, dict[str, Any]]:
    varying = {"workflow_uuid", "created_at", "updated_at", "completed_at", "creator_xid"}
    query = sa.text(f"SELECT * FROM dbos.{table} WHERE workflow_uuid IN ('by-dbos', 'by-eve')")
    with engine.connect() as c:
        found = c.execute(query).mappings().all()
    return {
        row["workflow_uuid"]: {
            k: v for k, v in row.items() if k not in varying and k != "retention_timestamp"
        }
        for row in found
    }


def test_dboss_self_check_still_refuses_a_method_registered_as_a_function() -> None:
    def method(self: object, value: int) -> int:
        return value

    def function(value: int) -> int:
        return value

    assert _class_name(None, function, (1,)) is None
    assert _config_name(None, function, (1,)) is None
    with pytest.raises(Exception, match="class instance, but is not properly registered"):
        _class_name(None, method, (object(), 1))
    with pytest.raises(Exception, match="class instance, but is not properly registered"):
        _config_name(None, method, (object(), 1))
    with pytest.raises(Exception, match="appears to be a class"):
        _class_name(None, function, (int,))
