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
    ScheduleRuntime,
    dbos_name,
    delivery_retry_seconds,
    install,
    schedule_tick,
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
        for entry in self.entries:
            if entry.catch_up:
                await self.catch_up(entry, before.get(dbos_name(entry.name)), down_until)

    async def catch_up(self, entry: ScheduleEntry, record: Any, down_until: datetime) -> None:
        """Enqueue the latest tick missed since the schedule last fired, once."""
        if record is None or record.get("status") == "PAUSED" or not record["last_fired_at"]:
            return  # never fired: nothing was missed yet
        since = datetime.fromisoformat(record["last_fired_at"])
        tick = latest_missed(entry.cron, entry.timezone, since, down_until)
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


async def start_scheduler(app_root: Path, service: SessionService) -> Scheduler:
    """The compiled agent's schedules, registered with the DBOS ``service`` launched and
    caught up: what every process of the agent that runs DBOS starts, since DBOS's
    scheduler fires registered ticks in each of them, and each must know how to run one."""
    schedules = await resolve_schedules(load_compiled_agent(app_root))
    scheduler = Scheduler(service, schedules)
    await scheduler.start()
    return scheduler
