"""The schedules a server runs: registered with DBOS's scheduler, caught up, paused, run now.

``start`` makes DBOS's schedule table say what ``agent/schedules/`` declares: each schedule
is upserted (DBOS keeps its paused state and its last fire time across restarts and
redeploys), one the agent no longer has is deleted. DBOS then fires each tick in every
worker under one workflow id, so it runs once. A tick missed while no worker ran is DBOS's
to skip; for a schedule with ``catch_up`` the latest one is enqueued here once, under the
id DBOS would have fired it with, so two workers starting together still run it once.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from dbos import DBOS

from eve.manifest import ScheduleEntry
from eve.runtime import load_compiled_agent
from eve.schedules import named_sessions
from eve.schedules.cron import dbos_cron, latest_missed
from eve.schedules.resolved import ResolvedSchedule, resolve_schedules
from eve.schedules.status import ScheduleStatus, entry_named, read_status, read_statuses
from eve.schedules.tick import (
    DBOS_PREFIX,
    SCHEDULE_WORKFLOW,
    ScheduleRuntime,
    dbos_name,
    delivery_retry_seconds,
    install,
    is_manual_run,
    schedule_tick,
    tick_of,
)
from eve.sessions import SessionService

log = logging.getLogger("eve.schedules")

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Scheduler:
    def __init__(
        self,
        service: SessionService,
        schedules: dict[str, ResolvedSchedule],
        *,
        clock: Clock = _utc_now,
    ) -> None:
        self.service = service
        self.schedules = schedules
        self.clock = clock

    @property
    def entries(self) -> list[ScheduleEntry]:
        return [s.entry for s in self.schedules.values()]

    async def start(self) -> None:
        """Register the schedules with the launched DBOS and catch up what was missed."""
        install(
            ScheduleRuntime(
                service=self.service,
                schedules=self.schedules,
                is_paused=self.paused,
                retry_seconds=delivery_retry_seconds(os.environ),
            )
        )
        before = {
            s["schedule_name"]: s
            for s in await DBOS.list_schedules_async(schedule_name_prefix=DBOS_PREFIX)
        }
        for stale in sorted(set(before) - {dbos_name(n) for n in self.schedules}):
            # a schedule the agent no longer declares must stop firing
            await DBOS.delete_schedule_async(stale)
        if not self.schedules:
            return
        if any(s.entry.session is not None for s in self.schedules.values()):
            await asyncio.to_thread(self.service.store.run, named_sessions.create_table)
        # what was missed ends here: once applied, DBOS fires the ticks after this itself, so
        # a later clock would take a tick it fires for the missed one (the same workflow id)
        down_until = self.clock()
        await DBOS.apply_schedules_async(
            [
                {
                    "schedule_name": dbos_name(entry.name),
                    # it returns the run's session id (read back as the last run's); DBOS
                    # types a scheduled workflow as returning nothing
                    "workflow_fn": schedule_tick,  # type: ignore[typeddict-item]
                    "schedule": dbos_cron(entry.cron),
                    "cron_timezone": entry.timezone,
                    "context": {"name": entry.name},
                    "automatic_backfill": False,
                }
                for entry in self.entries
            ]
        )
        launched_at = self.service.engine.launched_at
        for entry in self.entries:
            if entry.catch_up:
                await self.catch_up(
                    entry, before.get(dbos_name(entry.name)), down_until, launched_at=launched_at
                )

    async def catch_up(
        self,
        entry: ScheduleEntry,
        record: Any,
        down_until: datetime,
        *,
        launched_at: datetime | None = None,
    ) -> None:
        """Enqueue the latest tick missed since the schedule last fired, once.

        DBOS's scheduler fires the schedules it has on record from its launch
        (``launched_at``), before this reads them: on a slow start the record's last tick
        can be one fired since, and the ticks missed while down would look caught up. So
        the last tick is the newest one run before the launch, and the tick caught up the
        newest missed before it; only if none was is it one of the start's own (one that
        DBOS fired already runs once: the same workflow id)."""
        if record is None or record.get("status") == "PAUSED" or not record["last_fired_at"]:
            return  # never fired: nothing was missed yet
        since: datetime | None = datetime.fromisoformat(record["last_fired_at"])
        if launched_at is not None and since is not None and since >= launched_at:
            since = await _fired_before(entry.name, launched_at)
            if since is None:
                return  # no run of it before the launch is known
        assert since is not None
        tick = None
        if launched_at is not None and launched_at < down_until:
            tick = latest_missed(entry.cron, entry.timezone, since, launched_at)
        tick = tick or latest_missed(entry.cron, entry.timezone, since, down_until)
        if tick is None:
            return
        # DBOS's backfill takes (start, end) exclusive of start: the window holds this one tick
        await asyncio.to_thread(
            DBOS.backfill_schedule,
            dbos_name(entry.name),
            tick - timedelta(seconds=1),
            tick + timedelta(seconds=1),
        )
        log.info(
            "schedule %s: caught up the tick %s missed while down", entry.name, tick.isoformat()
        )

    async def paused(self, name: str) -> bool:
        record = await DBOS.get_schedule_async(dbos_name(name))
        return record is not None and record.get("status") == "PAUSED"

    async def statuses(self) -> list[ScheduleStatus]:
        return await read_statuses(DBOS, self.entries, self.clock())

    async def status(self, name: str) -> ScheduleStatus:
        entry = entry_named(self.entries, name)
        return await asyncio.to_thread(read_status, DBOS, entry, self.clock())

    async def run_now(self, name: str) -> str:
        """Enqueue a run of ``name`` now, paused or not; its workflow id."""
        entry_named(self.entries, name)
        handle = await asyncio.to_thread(DBOS.trigger_schedule, dbos_name(name))
        return str(handle.get_workflow_id())

    async def pause(self, name: str) -> ScheduleStatus:
        entry_named(self.entries, name)
        await asyncio.to_thread(DBOS.pause_schedule, dbos_name(name))
        return await self.status(name)

    async def resume(self, name: str) -> ScheduleStatus:
        entry_named(self.entries, name)
        await asyncio.to_thread(DBOS.resume_schedule, dbos_name(name))
        return await self.status(name)

    def stop(self) -> None:
        install(None)


#: runs of a schedule looked at for its last tick before a launch (the newest first; a few
#: asked for now may be among them)
_RUNS_LOOKED_AT = 10


async def _fired_before(name: str, launched_at: datetime) -> datetime | None:
    """The newest tick of schedule ``name`` that a run made before ``launched_at`` was for
    (runs asked for now, ``trigger_schedule``'s, are not ticks)."""
    runs = await DBOS.list_workflows_async(
        name=SCHEDULE_WORKFLOW,
        schedule_name=dbos_name(name),
        end_time=launched_at.isoformat(),
        sort_desc=True,
        limit=_RUNS_LOOKED_AT,
        load_input=True,
        load_output=False,
    )
    ticks = [
        tick
        for run in runs
        if not is_manual_run(run.workflow_id, name)
        and isinstance(tick := tick_of(run.input), datetime)
        and tick < launched_at
    ]
    return max(ticks, default=None)


async def start_scheduler(app_root: Path, service: SessionService) -> Scheduler:
    """The compiled agent's schedules, registered with the DBOS ``service`` launched and
    caught up: what every process of the agent that runs DBOS starts, since DBOS's
    scheduler fires registered ticks in each of them, and each must know how to run one."""
    schedules = await resolve_schedules(load_compiled_agent(app_root))
    scheduler = Scheduler(service, schedules)
    await scheduler.start()
    return scheduler
