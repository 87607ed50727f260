"""``eve schedules``: list, run, pause and resume through the session database, before a
server ever ran and beside one; a run asked for here is run by the next server."""

from __future__ import annotations

import json

from click.testing import CliRunner

from eve.cli.main import main
from tests.conftest import AppFactory
from tests.schedules.apps import md_schedule, scheduled_sessions, wait_until
from tests.sessions.inprocess import InProcessServer

YEARLY = "0 0 1 1 *"


def test_list_run_pause_and_a_queued_run_that_the_next_server_runs(make_app: AppFactory) -> None:
    root = make_app({"agent/schedules/reports/yearly.md": md_schedule(cron=YEARLY)})
    runner = CliRunner()
    assert runner.invoke(main, ["-C", str(root), "compile"]).exit_code == 0

    listed = runner.invoke(main, ["-C", str(root), "schedules", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    (status,) = json.loads(listed.output)["schedules"]
    assert status["name"] == "reports/yearly"
    assert status["next_runs"][0].endswith("-01-01T00:00:00+00:00")
    assert status["last_run"] is None

    # no server has registered it yet: nothing could run it
    early = runner.invoke(main, ["-C", str(root), "schedules", "run", "reports/yearly"])
    assert early.exit_code == 1
    assert "not registered in the session database yet" in early.output
    unknown = runner.invoke(main, ["-C", str(root), "schedules", "run", "nope"])
    assert unknown.exit_code == 1
    assert "no schedule named 'nope' (the agent's schedules: reports/yearly)" in unknown.output

    InProcessServer(app_root=root).start().stop()  # registers the schedules
    paused = runner.invoke(main, ["-C", str(root), "schedules", "pause", "reports/yearly"])
    assert "· paused ·" in paused.output, paused.output
    queued = runner.invoke(main, ["-C", str(root), "schedules", "run", "reports/yearly"])
    assert queued.exit_code == 0 and queued.output.startswith("queued reports/yearly")

    server = InProcessServer(app_root=root).start()
    try:
        (run,) = wait_until(lambda: scheduled_sessions(server))
    finally:
        server.stop()
    # a run asked for runs even while the schedule is paused
    assert (run["name"], run["manual"]) == ("reports/yearly", True)
