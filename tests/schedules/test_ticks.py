"""Scheduled runs through the real app in process: DBOS fires the ticks (real seconds), a
tick opens a durable session, and the routes list, run, pause and resume schedules."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from eve.schedules.status import records_client
from eve.sessions.settings import resolve_settings
from tests.conftest import AppFactory
from tests.oidc.provider import Provider
from tests.schedules.apps import md_schedule, scheduled_sessions, wait_until
from tests.sessions.inprocess import InProcessServer
from tests.sessions.principals import ALICE, As, verifying

SKIPPER = """
from eve.schedules import define_schedule

def run(ctx):
    # a manual run sends nothing: the .py decides, per tick
    return None if ctx.manual else f"tick {ctx.tick:%H:%M:%S}"

schedule = define_schedule(cron="0 0 1 1 *", run=run)
"""


@pytest.fixture
def served(make_app: AppFactory) -> Iterator[tuple[Path, InProcessServer]]:
    root = make_app(
        {
            "agent/schedules/ticker.md": md_schedule(),
            "agent/schedules/jobs/yearly.py": SKIPPER,
        }
    )
    server = InProcessServer(app_root=root).start()
    try:
        yield root, server
    finally:
        server.stop()


def test_a_tick_opens_a_session_that_says_what_started_it(
    served: tuple[Path, InProcessServer],
) -> None:
    _, server = served
    runs = wait_until(lambda: scheduled_sessions(server))
    assert runs[0]["kind"] == "schedule"
    assert runs[0]["name"] == "ticker"
    assert runs[0]["tick"].endswith("+00:00")
    # an ordinary durable session: its first turn runs and completes
    session = runs[0]["session_id"]
    assert wait_until(lambda: server.get(f"/session/{session}").json()["turns"] == 1)
    listed = {s["name"]: s for s in server.get("/schedules").json()["schedules"]}
    assert set(listed) == {"ticker", "jobs/yearly"}
    assert listed["jobs/yearly"]["next_runs"][0].endswith("-01-01T00:00:00+00:00")
    assert listed["ticker"]["last_run"]["tick"]


def test_a_py_schedule_that_returns_none_skips_and_one_run_now_opens_nothing(
    served: tuple[Path, InProcessServer],
) -> None:
    _, server = served
    answer = server.post("/schedules/jobs/yearly/run")
    assert answer.status_code == 202, answer.text
    workflow_id = answer.json()["workflowId"]

    def finished() -> dict[str, object] | None:
        listed = {s["name"]: s for s in server.get("/schedules").json()["schedules"]}
        last = listed["jobs/yearly"]["last_run"]
        return last if last and last["status"] == "SUCCESS" else None

    last = wait_until(finished)
    assert last["workflow_id"] == workflow_id
    assert last["manual"] is True
    assert last["session_id"] is None  # run(ctx) said None: no session was opened
    assert all(run["name"] != "jobs/yearly" for run in scheduled_sessions(server))


def test_pause_is_durable_and_an_unknown_name_is_404(make_app: AppFactory) -> None:
    root = make_app({"agent/schedules/ticker.md": md_schedule(cron="0 0 1 1 *")})
    server = InProcessServer(app_root=root).start()
    try:
        paused = server.post("/schedules/ticker/pause").json()["schedule"]
        assert paused["paused"] is True
        assert paused["next_runs"] == []
        missing = server.post("/schedules/nope/run")
        assert missing.status_code == 404
        assert missing.json()["code"] == "schedule_not_found"
    finally:
        server.stop()
    server = InProcessServer(app_root=root).start()
    try:
        (listed,) = server.get("/schedules").json()["schedules"]
        assert listed["paused"] is True  # DBOS kept it across the restart
        resumed = server.post("/schedules/ticker/resume").json()["schedule"]
        assert resumed["paused"] is False
    finally:
        server.stop()


def test_a_user_sees_no_schedules_and_reaches_none(make_app: AppFactory) -> None:
    root = make_app({"agent/schedules/ticker.md": md_schedule(cron="0 0 1 1 *")})
    provider = Provider()
    server = verifying(root, provider).start()
    try:
        alice = As(server, provider, ALICE)
        assert alice.get("/schedules").json() == {"ok": True, "schedules": []}
        for action in ("run", "pause", "resume"):
            refused = alice.post(f"/schedules/ticker/{action}")
            assert refused.status_code == 404, refused.text
        # the operator (the shared token) sees it
        assert [s["name"] for s in server.get("/schedules").json()["schedules"]] == ["ticker"]
    finally:
        server.stop()


def test_a_tick_of_a_paused_schedule_that_still_fires_sends_nothing(
    make_app: AppFactory,
) -> None:
    root = make_app({"agent/schedules/ticker.md": md_schedule(cron="0 0 1 1 *")})
    server = InProcessServer(app_root=root).start()
    try:
        server.post("/schedules/ticker/pause")
        # a tick DBOS enqueues anyway (a worker that has not seen the pause yet): as
        # DBOS's own scheduler would, under the tick's workflow id
        settings = resolve_settings(root)
        with records_client(settings) as records:
            records.backfill_schedule(  # DBOSClient's, beside what eve reads through it
                "eve:ticker", datetime(2025, 12, 31, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
            )

        def ran() -> dict[str, object] | None:
            (status,) = server.get("/schedules").json()["schedules"]
            last = status["last_run"]
            return last if last and last["status"] == "SUCCESS" else None

        last = wait_until(ran)
        assert last["tick"] == "2026-01-01T00:00:00+00:00" and last["manual"] is False
        assert last["session_id"] is None
        assert scheduled_sessions(server) == []
    finally:
        server.stop()
