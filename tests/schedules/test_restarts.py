"""A restart across ticks (real seconds: DBOS fires them): the ticks missed while the server
was down are run once (``catch_up: true``) or skipped."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from tests.conftest import AppFactory
from tests.schedules.apps import md_schedule, scheduled_sessions, wait_until
from tests.sessions.inprocess import InProcessServer


def _ticks_between(runs: list[dict[str, str]], start: datetime, end: datetime) -> list[str]:
    return [r["tick"] for r in runs if start < datetime.fromisoformat(r["tick"]) < end]


@pytest.mark.parametrize(("catch_up", "missed_runs"), [("true", 1), ("false", 0)])
def test_ticks_missed_while_down_run_once_or_are_skipped(
    make_app: AppFactory, catch_up: str, missed_runs: int
) -> None:
    root = make_app({"agent/schedules/ticker.md": md_schedule(catch_up=catch_up)})
    server = InProcessServer(app_root=root).start()
    try:
        wait_until(lambda: scheduled_sessions(server))  # it fired: DBOS knows its last tick
    finally:
        server.stop()
    stopped = datetime.now(UTC)
    # down across at least two ticks of a schedule that fires every second
    time.sleep(2.5)
    restarted = datetime.now(UTC)
    server = InProcessServer(app_root=root).start()
    try:

        def after() -> list[dict[str, str]]:
            runs = scheduled_sessions(server)
            return [r for r in runs if datetime.fromisoformat(r["tick"]) > restarted]

        # two live ticks after the restart: the catch-up, enqueued at start, came before them
        wait_until(lambda: len(after()) >= 2)
        if missed_runs:
            wait_until(lambda: _ticks_between(scheduled_sessions(server), stopped, restarted))
        runs = scheduled_sessions(server)
        missed = _ticks_between(runs, stopped, restarted)
        assert len(missed) == missed_runs, runs
        # and no tick ran twice
        ticks = [r["tick"] for r in runs if not r.get("manual")]
        assert len(ticks) == len(set(ticks))
    finally:
        server.stop()
