"""What a schedule looks like from outside: its declaration, paused or not, its last run and
its next fire times. The document of ``GET /eve/v1/schedules``, ``eve schedules list`` and
the dev UI's panel, built the same way from DBOS's schedule and workflow records whether a
launched DBOS (a server) or a ``DBOSClient`` (the CLI) read them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Protocol, assert_never

import msgspec
from dbos import DBOS, DBOSClient

from eve.errors import ScheduleNotFound
from eve.manifest import ChannelDelivery, ScheduleEntry, WebhookDelivery
from eve.runtime.info import ScheduleInfo, schedule_info
from eve.schedules.cron import next_fires
from eve.schedules.tick import SCHEDULE_WORKFLOW, dbos_name, is_manual_run, tick_of
from eve.sessions.dbos_data import EveSerializer
from eve.sessions.engine import dbos_config
from eve.sessions.settings import SessionSettings

#: how many next fire times a status lists
NEXT_COUNT = 3


class LastRun(msgspec.Struct, kw_only=True):
    """A schedule's latest run (its DBOS workflow)."""

    #: the time it ran for (a manual run's: when it was asked for)
    tick: str
    #: the workflow's status: ``ENQUEUED``, ``PENDING``, ``SUCCESS``, ``ERROR`` …
    status: str
    #: the session it ran in; None while it has not opened one, or when ``run`` skipped
    session_id: str | None = None
    manual: bool = False
    workflow_id: str


class ScheduleStatus(ScheduleInfo, kw_only=True):
    """A schedule as declared (what ``eve info`` shows of it) and how it runs now."""

    paused: bool
    #: the next fire times (ISO 8601, in the schedule's time zone); none while paused
    next_runs: list[str]
    last_run: LastRun | None = None
    #: where the answer goes (``webhook $VAR``), when anywhere
    deliver: str | None = None


class ScheduleRecords(Protocol):
    """The part of ``DBOS`` (a class) and ``DBOSClient`` (an instance) eve reads and
    changes schedules through; both answer these calls the same way."""

    def get_schedule(self, name: str) -> Any: ...

    def list_workflows(
        self,
        *,
        name: str | list[str] | None = None,
        schedule_name: str | list[str] | None = None,
        sort_desc: bool = False,
        limit: int | None = None,
        load_input: bool = True,
        load_output: bool = True,
    ) -> list[Any]: ...

    def pause_schedule(self, name: str) -> None: ...

    def resume_schedule(self, name: str) -> None: ...

    def trigger_schedule(self, schedule_name: str) -> Any: ...


@contextmanager
def records_client(settings: SessionSettings) -> Iterator[ScheduleRecords]:
    """DBOS's schedule records of the session database ``settings`` names, read by a
    ``DBOSClient`` (no DBOS launched: the CLI, beside a running server or none)."""
    config = dbos_config(settings)
    # the client never migrates: on a database no server has opened yet, DBOS's tables
    # are made first (as a server's launch would make them)
    DBOS.migrate(settings.system_url)
    client = DBOSClient(
        system_database_url=settings.system_url,
        system_database_engine=config.get("system_database_engine"),
        serializer=EveSerializer(),
        application_name=config["name"],
    )
    try:
        yield client
    finally:
        client.destroy()


def entry_named(entries: list[ScheduleEntry], name: str) -> ScheduleEntry:
    for entry in entries:
        if entry.name == name:
            return entry
    known = ", ".join(e.name for e in entries) or "none"
    raise ScheduleNotFound(
        f"no schedule named '{name}' (the agent's schedules: {known})", name=name
    )


def _last_run(name: str, workflow: Any) -> LastRun:
    tick = tick_of(workflow.input)
    manual = is_manual_run(workflow.workflow_id, name)
    output = workflow.output if isinstance(workflow.output, str) else None
    return LastRun(
        tick=tick.isoformat() if isinstance(tick, datetime) else "",
        status=str(workflow.status),
        session_id=output,
        manual=manual,
        workflow_id=workflow.workflow_id,
    )


def status_of(
    entry: ScheduleEntry, record: Any, latest: Any | None, now: datetime
) -> ScheduleStatus:
    """``entry``'s status from its DBOS schedule row (None: not registered yet, as before
    a server first started with it) and its latest workflow, at ``now``."""
    paused = record is not None and record.get("status") == "PAUSED"
    fires = [] if paused else next_fires(entry.cron, entry.timezone, now, NEXT_COUNT)
    return ScheduleStatus(
        **msgspec.structs.asdict(schedule_info(entry)),
        paused=paused,
        next_runs=[f.isoformat() for f in fires],
        last_run=None if latest is None else _last_run(entry.name, latest),
        deliver=_delivery(entry),
    )


def _delivery(entry: ScheduleEntry) -> str | None:
    """Where a run's answer goes, as ``eve schedules list`` shows it (never a URL)."""
    match entry.deliver:
        case WebhookDelivery():
            return f"webhook ${entry.deliver.url_env}"
        case ChannelDelivery():
            return f"channel {entry.deliver.channel} to {entry.deliver.to}"
        case None:
            return None
        case _:
            assert_never(entry.deliver)


def read_status(
    records: ScheduleRecords, entry: ScheduleEntry, now: datetime | None = None
) -> ScheduleStatus:
    """One schedule's status, read now (blocking)."""
    record = records.get_schedule(dbos_name(entry.name))
    runs = records.list_workflows(
        name=SCHEDULE_WORKFLOW,
        schedule_name=dbos_name(entry.name),
        sort_desc=True,
        limit=1,
        load_input=True,
        load_output=True,
    )
    return status_of(entry, record, runs[0] if runs else None, now or datetime.now(UTC))


async def read_statuses(
    records: ScheduleRecords, entries: list[ScheduleEntry], now: datetime | None = None
) -> list[ScheduleStatus]:
    return [await asyncio.to_thread(read_status, records, e, now) for e in entries]
