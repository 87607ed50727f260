"""Retention: deleting DBOS's records of workflows that finished long ago.

DBOS keeps every workflow it ran (its status, input, output, each step's output, its
messages and streams) until someone deletes it. eve needs a workflow's records only while
it may still run or replay: a finished turn is never replayed, and what a session *was*
(its history, its events) lives in eve's own tables, which this never touches (but for
the sandbox workspaces' storage, swept below). So a finished workflow older than the
retention period can go, unless a workflow still active is its parent or its child (a
replay of the one asks DBOS for the other's result).

``eve sessions prune`` runs this once; ``eve serve`` runs it every hour when
``EVE_RETENTION`` names a period. Deleting goes through DBOS's own ``delete_workflows``,
which removes the payload tables' rows with the status row. Then the sandbox workspaces'
storage that neither a session's head nor a kept workflow's steps name goes too
(``workspace_sweep.py``), and eve's step records (``eve_step_records``) of the workflows
DBOS no longer keeps: only a replay reads them.

Last, the accepted places of turns long done (``eve_accepted``, ``accepted.py``): a place
is what a 202 promised, and the sweep that delivers after a crash reads only those not
done, so a done one goes once it is older than the retention period *and* than an
Idempotency-Key's life (``idempotency.TTL_SECONDS``): within a key's window a repeated
request finds its turn's place still there. A place not yet delivered, or behind one
that is not done, is never deleted (``accepted.forget_delivered``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from dbos import DBOSClient, WorkflowStatus

from eve.errors import DatabaseUnavailable, EveError, RetentionInvalid
from eve.sessions.accepted import forget_delivered
from eve.sessions.database_errors import failure_kind, unavailable
from eve.sessions.dbos_data import EveSerializer
from eve.sessions.idempotency import TTL_SECONDS
from eve.sessions.settings import SessionSettings
from eve.sessions.sqlite import sqlite_engine
from eve.sessions.tables import step_records
from eve.sessions.wal_checkpoints import dispose_engine
from eve.sessions.workspace_sweep import (
    SweepReport,
    eve_engine,
    forget_gone_workflows,
    sweep_workspaces,
)

log = logging.getLogger("eve.sessions")

RETENTION_ENV = "EVE_RETENTION"
#: ``eve sessions prune`` without ``--older-than`` or ``EVE_RETENTION``
DEFAULT_RETENTION = "7d"
#: how often ``eve serve`` prunes when ``EVE_RETENTION`` is set
PRUNE_EVERY_SECONDS = 3600.0
#: workflows listed and deleted at once: one transaction each, so a long prune holds no
#: lock for long
BATCH = 500

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_PERIOD = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_FINISHED = ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]
_ACTIVE = ["PENDING", "ENQUEUED", "DELAYED"]


def parse_period(raw: str, *, source: str) -> float | None:
    """Seconds in ``raw`` (``30d``, ``12h``, ``90m``, ``45s``, ``2w``); None for ``off``.
    ``source`` names where it came from in the error (``--older-than``, ``EVE_RETENTION``)."""
    text = raw.strip().lower()
    if text in ("off", "never"):
        return None
    match = _PERIOD.fullmatch(text)
    if match is None:
        raise RetentionInvalid(
            f"{source} must be a number and a unit (30d, 12h, 90m, 45s, 2w) or off, not {raw!r}",
            value=raw,
        )
    return float(match[1]) * _UNITS[match[2]]


def configured_retention(env: Mapping[str, str]) -> float | None:
    """``EVE_RETENTION`` in seconds; None when unset or ``off`` (``eve serve`` keeps all)."""
    raw = env.get(RETENTION_ENV, "").strip()
    return None if not raw else parse_period(raw, source=RETENTION_ENV)


@dataclass(frozen=True, kw_only=True)
class PruneReport:
    """What a prune deleted (or, in a dry run, would delete)."""

    #: workflows that finished before this (Unix seconds) were candidates
    cutoff: float
    dry_run: bool
    #: finished workflows deleted, by their final status
    deleted: dict[str, int]
    #: old finished workflows kept: an active workflow is their parent or child
    kept: int
    #: sandbox workspace storage deleted after the workflows
    workspace: SweepReport = dataclasses.field(default_factory=SweepReport)
    #: accepted places (``eve_accepted``) of turns done long ago
    accepted: int = 0
    #: step records (``eve_step_records``) of workflows DBOS no longer keeps
    step_records: int = 0

    @property
    def total(self) -> int:
        return sum(self.deleted.values())

    def as_json(self) -> dict[str, object]:
        return {
            "dryRun": self.dry_run,
            "cutoff": datetime.fromtimestamp(self.cutoff, UTC).isoformat(),
            "deleted": self.deleted,
            "total": self.total,
            "kept": self.kept,
            "workspace": self.workspace.as_json(),
            "mcpCalls": self.workspace.mcp_calls,
            "accepted": self.accepted,
            "stepRecords": self.step_records,
        }


def prune_workflows(
    settings: SessionSettings, *, older_than: float, dry_run: bool, now: float | None = None
) -> PruneReport:
    """Delete the records of workflows that finished more than ``older_than`` seconds
    before ``now``, except those an active workflow may need (see the module docstring)."""
    now = time.time() if now is None else now
    cutoff = now - older_than
    empty = PruneReport(cutoff=cutoff, dry_run=dry_run, deleted={}, kept=0)
    if (
        not settings.is_postgres
        and not Path(settings.system_url.removeprefix("sqlite:///")).exists()
    ):
        return empty  # no session ever ran here
    try:
        with _client(settings) as client:
            report, doomed = _prune(client, cutoff=cutoff, dry_run=dry_run)
            swept = sweep_workspaces(settings, client, dry_run=dry_run, doomed=doomed)
            records = _forget_step_records(settings, client, dry_run=dry_run, doomed=doomed)
            # a place outlives its Idempotency-Key, however short the retention period
            forgotten = _forget_accepted(
                settings, before=min(cutoff, now - TTL_SECONDS), dry_run=dry_run
            )
            return dataclasses.replace(
                report, workspace=swept, accepted=forgotten, step_records=records
            )
    except EveError:
        raise
    except Exception as error:
        found = unavailable(error)
        if found is not None:
            raise found from None
        raise DatabaseUnavailable(
            f"cannot prune the session database ({failure_kind(error)})"
        ) from None


def _prune(client: DBOSClient, *, cutoff: float, dry_run: bool) -> tuple[PruneReport, set[str]]:
    """The report, and in a dry run the workflows it would delete (the sweep counts their
    workspace notes as gone)."""
    active = _listed(client, status=_ACTIVE)
    # a replay of an active workflow asks DBOS for its children's results, and an active
    # child's parent may still be waiting on it
    guarded = {s.workflow_id for s in active} | {
        s.parent_workflow_id for s in active if s.parent_workflow_id
    }
    before = datetime.fromtimestamp(cutoff, UTC).isoformat()
    deleted: dict[str, int] = {}
    would_delete: set[str] = set()
    kept = offset = 0
    while True:  # a page at a time: the finished workflows of years may not fit in memory
        page = _listed(
            client, status=_FINISHED, completed_before=before, limit=BATCH, offset=offset
        )
        doomed = [
            s for s in page if s.workflow_id not in guarded and s.parent_workflow_id not in guarded
        ]
        for status in doomed:
            deleted[str(status.status)] = deleted.get(str(status.status), 0) + 1
        kept += len(page) - len(doomed)
        if doomed and not dry_run:
            client.delete_workflows([s.workflow_id for s in doomed])
        elif dry_run:
            would_delete.update(s.workflow_id for s in doomed)
        if len(page) < BATCH:
            report = PruneReport(cutoff=cutoff, dry_run=dry_run, deleted=deleted, kept=kept)
            return report, would_delete
        # what was deleted left the listing; what was kept (all, in a dry run) is still in it
        offset += len(page) - (0 if dry_run else len(doomed))


def _forget_step_records(
    settings: SessionSettings, client: DBOSClient, *, dry_run: bool, doomed: set[str]
) -> int:
    if not settings.is_postgres and not Path(settings.eve_url.removeprefix("sqlite:///")).exists():
        return 0  # no session ever ran here
    with eve_engine(settings) as engine:
        column = step_records.c.workflow_id
        _, rows = forget_gone_workflows(engine, client, column, doomed=doomed, dry_run=dry_run)
    return rows


def _forget_accepted(settings: SessionSettings, *, before: float, dry_run: bool) -> int:
    if not settings.is_postgres and not Path(settings.eve_url.removeprefix("sqlite:///")).exists():
        return 0  # no session ever ran here
    with eve_engine(settings) as engine, engine.begin() as c:
        return forget_delivered(c, before=before, dry_run=dry_run)


def _listed(client: DBOSClient, **query: object) -> list[WorkflowStatus]:
    found: list[WorkflowStatus] = client.list_workflows(
        load_input=False,
        load_output=False,
        **query,  # type: ignore[arg-type]
    )
    return found


@contextlib.contextmanager
def _client(settings: SessionSettings) -> Iterator[DBOSClient]:
    """A DBOS client on the system database, without launching DBOS (no workflow runs)."""
    engine: sa.Engine | None = None
    if not settings.is_postgres:
        engine = sqlite_engine(
            settings.system_url,
            synchronous=settings.sqlite_synchronous,
            immediate=True,  # foreign keys on: a status row's messages and streams go with it
            busy_timeout=settings.sqlite_busy_timeout,
        )
    try:
        client = DBOSClient(
            system_database_url=settings.system_url if engine is None else None,
            system_database_engine=engine,
            serializer=EveSerializer(),
        )
        try:
            yield client
        finally:
            client.destroy()
    finally:
        if engine is not None:
            dispose_engine(engine)


async def prune_periodically(
    settings: SessionSettings, *, older_than: float, every: float = PRUNE_EVERY_SECONDS
) -> None:
    """Prune now and every ``every`` seconds, until cancelled (``eve serve``)."""
    while True:
        try:
            report = await asyncio.to_thread(
                prune_workflows, settings, older_than=older_than, dry_run=False
            )
        except EveError as error:  # a database blip: the next round tries again
            log.warning("pruning finished workflows failed: %s", error)
        else:
            swept = report.workspace
            if report.total or swept.trees or swept.blobs or report.accepted:
                log.info(
                    "pruned %d finished workflow(s): %s; workspace storage: %d tree(s), "
                    "%d blob(s), %d byte(s) freed; %d accepted place(s) of done turns",
                    report.total,
                    report.deleted,
                    swept.trees,
                    swept.blobs,
                    swept.freed_bytes,
                    report.accepted,
                )
        await asyncio.sleep(every)
