"""A restart across ticks (real seconds: DBOS fires them): the ticks missed while the server
was down are run once (``catch_up: true``) or skipped."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from datetime import UTC, datetime

import pytest
from dbos import DBOS

from eve.schedules.scheduler import Scheduler
from eve.schedules.tick import dbos_name
from tests.conftest import AppFactory
from tests.schedules.apps import md_schedule, scheduled_sessions, wait_until
from tests.sessions.inprocess import InProcessServer

#: the scheduler's line for a caught-up tick (eve/schedules/scheduler.py)
CAUGHT = re.compile(r"caught up the tick (\S+) missed while down")


def _ticks_between(
    runs: list[dict[str, str]], start: datetime, end: datetime, inclusive: bool
) -> list[str]:
    def inside(tick: datetime) -> bool:
        return start < tick <= end if inclusive else start < tick < end

    return [r["tick"] for r in runs if inside(datetime.fromisoformat(r["tick"]))]


def _last_fired(name: str) -> str | None:
    """When DBOS last fired the schedule ``name`` (the running server's DBOS)."""
    record = DBOS.get_schedule(dbos_name(name))
    return None if record is None else record["last_fired_at"]


def _started_late(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler starts only once DBOS's scheduler, launched before it, has fired a tick
    live (and recorded it): a slow start, made certain."""
    start = Scheduler.start

    async def late(self: Scheduler) -> None:
        launched_at = self.service.engine.launched_at
        assert launched_at is not None
        while True:
            fired = _last_fired("ticker")
            if fired is not None and datetime.fromisoformat(fired) > launched_at:
                break
            await asyncio.sleep(0.05)
        await start(self)

    monkeypatch.setattr(Scheduler, "start", late)


@pytest.mark.parametrize(
    ("catch_up", "missed_runs", "late"),
    [("true", 1, False), ("false", 0, False), ("true", 1, True)],
    ids=["caught-up", "skipped", "caught-up-after-a-live-tick"],
)
def test_ticks_missed_while_down_run_once_or_are_skipped(
    make_app: AppFactory,
    catch_up: str,
    missed_runs: int,
    late: bool,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = make_app({"agent/schedules/ticker.md": md_schedule(catch_up=catch_up)})
    server = InProcessServer(app_root=root).start()
    try:
        # it fired, and DBOS knows its last tick: DBOS's scheduler records the tick after
        # enqueueing it, so a session can start before the record, and a stop between the two
        # left nothing to catch up from (a flake seen twice under load)
        wait_until(lambda: scheduled_sessions(server) and _last_fired("ticker"))
    finally:
        server.stop()
    stopped = datetime.now(UTC)
    # down across at least two ticks of a schedule that fires every second
    time.sleep(2.5)
    restarted = datetime.now(UTC)
    caplog.set_level(logging.INFO, logger="eve.schedules")
    if late:
        # DBOS fires the schedules it has on record from its launch: a tick fired live
        # before the scheduler read the record must not hide the ticks missed while down
        _started_late(monkeypatch)
    server = InProcessServer(app_root=root).start()
    try:
        # the missed ticks end where the restarted server began to fire them itself, which a
        # loaded machine puts well after ``restarted``: the scheduler says which one it took
        caught = [CAUGHT.search(r.getMessage()) for r in caplog.records]
        [tick] = [m.group(1) for m in caught if m] or [None]
        if missed_runs:
            assert tick is not None, "no tick was caught up"
            end = datetime.fromisoformat(tick)
            assert stopped < end
            wait_until(lambda: _ticks_between(scheduled_sessions(server), stopped, end, True))
        else:
            assert tick is None
            end = restarted

        def after() -> list[dict[str, str]]:
            runs = scheduled_sessions(server)
            return [r for r in runs if datetime.fromisoformat(r["tick"]) > end]

        wait_until(lambda: len(after()) >= 2)  # and it goes on firing live ticks
        runs = scheduled_sessions(server)
        missed = _ticks_between(runs, stopped, end, bool(missed_runs))
        assert len(missed) == missed_runs, runs
        # and no tick ran twice
        ticks = [r["tick"] for r in runs if not r.get("manual")]
        assert len(ticks) == len(set(ticks))
    finally:
        server.stop()
