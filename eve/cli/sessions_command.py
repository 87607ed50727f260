"""``eve sessions``: the session database's upkeep (``prune`` deletes old workflow records)
and ``fork``, which starts a session where another stands, in the database itself."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import click

from eve.cli.errors import translate_errors
from eve.cli.main import app_root_of
from eve.cli.principal_option import parse_principal
from eve.manifest import MANIFEST_PATH, ROOT_NODE_ID
from eve.runtime.load import read_manifest
from eve.sessions.forking import fork_session
from eve.sessions.retention import (
    DEFAULT_RETENTION,
    RETENTION_ENV,
    PruneReport,
    parse_period,
    prune_workflows,
)
from eve.sessions.service import new_session_id
from eve.sessions.settings import SessionSettings, resolve_settings
from eve.sessions.store import SessionStore


def url_env_of(app_root: Path) -> str | None:
    """The variable agent.py's ``database_url_env`` names, from the compiled manifest (None:
    ``EVE_DATABASE_URL``, also when nothing is compiled yet)."""
    path = app_root / MANIFEST_PATH
    if not path.exists():
        return None
    node = read_manifest(path).nodes.get(ROOT_NODE_ID)
    return node.config.database_url_env if node is not None else None


def settings_for(app_root: Path, database: str | None) -> SessionSettings:
    """As ``eve serve`` resolves them: ``--database``, else the environment."""
    if database is not None:
        # read as if from a variable named after the option, so an error names the option
        return resolve_settings(app_root, env={"--database": database}, url_env="--database")
    return resolve_settings(app_root, url_env=url_env_of(app_root))


def _describe(report: PruneReport, period: str) -> str:
    verb = "would delete" if report.dry_run else "deleted"
    before = datetime.fromtimestamp(report.cutoff, UTC).isoformat(timespec="seconds")
    counts = ", ".join(f"{status} {n}" for status, n in sorted(report.deleted.items()))
    line = (
        f"{verb} the records of {report.total} workflow(s) that finished more than {period} "
        f"ago (before {before})" + (f": {counts}" if counts else "")
    )
    if report.kept:
        line += f"; kept {report.kept} that a running workflow may still need"
    swept = report.workspace
    line += (
        f"\n{verb} {swept.trees} workspace tree(s) and {swept.blobs} file content(s) "
        f"({swept.freed_bytes:,} bytes) that no session head or kept workflow names"
    )
    if swept.mcp_calls:
        line += f", and {swept.mcp_calls} MCP call record(s) of workflows gone"
    if report.step_records:
        line += f"\n{verb} {report.step_records} step record(s) of the workflows gone"
    if report.accepted:
        line += (
            f"\n{verb} {report.accepted} accepted turn record(s) of turns done long ago "
            "(kept while an Idempotency-Key may repeat them)"
        )
    return line


_database = click.option(
    "--database",
    metavar="URL",
    help="A postgresql:// URL instead of the one eve serve would use.",
)


@click.group("sessions")
def sessions_command() -> None:
    """Upkeep of the session database, and forks of its sessions."""


@sessions_command.command("prune")
@click.option(
    "--older-than",
    "older_than",
    metavar="PERIOD",
    help=f"Delete workflows that finished longer ago than this (30d, 12h, 90m, 45s, 2w); "
    f"default: {RETENTION_ENV}, else {DEFAULT_RETENTION}.",
)
@click.option("--dry-run", is_flag=True, help="Count what would be deleted; delete nothing.")
@_database
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_context
@translate_errors
def prune_command(
    ctx: click.Context,
    older_than: str | None,
    dry_run: bool,
    database: str | None,
    as_json: bool,
) -> None:
    """Delete DBOS's records of workflows that finished long ago.

    A turn's workflow records (its input, its steps' outputs) matter only while it may run
    or replay; the session's history and event log are eve's own tables and stay. Workflows
    still queued or running, and finished ones an active workflow may need, are kept.
    """
    source = "--older-than"
    if older_than is None:
        older_than = os.environ.get(RETENTION_ENV, "").strip() or DEFAULT_RETENTION
        source = RETENTION_ENV if RETENTION_ENV in os.environ else source
    seconds = parse_period(older_than, source=source)
    if seconds is None:
        click.echo(f"eve: nothing deleted: {source} is {older_than!r}", err=True)
        return
    settings = settings_for(app_root_of(ctx), database)
    report = prune_workflows(settings, older_than=seconds, dry_run=dry_run)
    if as_json:
        click.echo(json.dumps(report.as_json()))
    else:
        click.echo(_describe(report, older_than.strip()))


@sessions_command.command("fork")
@click.argument("session_id")
@click.option(
    "--principal",
    metavar="KIND:ID",
    help="Fork as this principal (user:<id>, channel:<id>): it must own the session, and "
    "owns the fork. Default: the operator, who may fork any session and owns the fork.",
)
@_database
@click.option("--json", "as_json", is_flag=True, help="Print the fork's id and source as JSON.")
@click.pass_context
@translate_errors
def fork_command(
    ctx: click.Context,
    session_id: str,
    principal: str | None,
    database: str | None,
    as_json: bool,
) -> None:
    """Start a new session where SESSION_ID stands between its turns; print its id.

    The fork gets a copy of the session's history, state and sandbox workspace, and goes
    on from there on its own; the session itself is unchanged. A session with a turn
    running or queued is refused. No server needs to run: this writes the database.
    """
    who = parse_principal(principal)
    settings = settings_for(app_root_of(ctx), database)
    store = SessionStore(settings.eve_url, synchronous=settings.sqlite_synchronous)
    try:
        forked = fork_session(store, session_id, fork_id=new_session_id(), principal=who)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps({"sessionId": forked.session_id, "forkedFrom": forked.forked_from}))
    else:
        click.echo(forked.session_id)
