"""``eve schedules``: list the agent's schedules (next fire times, last run), run one now,
pause or resume one, through the session database a server of the agent uses.

The commands read and write DBOS's schedule records with a ``DBOSClient``: a run asked for
here is queued, and whichever worker of a running ``eve serve`` or ``eve dev`` dequeues it
runs it (as a tick, with ``manual: true``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import msgspec

from eve.cli.errors import translate_errors
from eve.cli.main import app_root_of
from eve.cli.sessions_command import url_env_of
from eve.errors import ScheduleNotFound
from eve.manifest import MANIFEST_PATH, ROOT_NODE_ID, ScheduleEntry
from eve.runtime.load import read_manifest
from eve.schedules.status import ScheduleRecords, ScheduleStatus, entry_named, read_status
from eve.schedules.status import records_client as _records_client
from eve.schedules.tick import dbos_name
from eve.sessions.settings import resolve_settings


def _entries(app_root: Path) -> list[ScheduleEntry]:
    return read_manifest(app_root / MANIFEST_PATH).nodes[ROOT_NODE_ID].schedules


@contextmanager
def _client(app_root: Path) -> Iterator[ScheduleRecords]:
    with _records_client(resolve_settings(app_root, url_env=url_env_of(app_root))) as client:
        yield client


def _line(status: ScheduleStatus) -> str:
    state = "paused" if status.paused else f"next {status.next_runs[0]}"
    last = status.last_run
    ran = "never ran" if last is None else f"last {last.tick or '?'} {last.status.lower()}"
    return f"{status.name} · {status.cron} ({status.timezone}) · {state} · {ran}"


@click.group("schedules")
def schedules_command() -> None:
    """The agent's schedules (agent/schedules/)."""


@schedules_command.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the statuses as JSON.")
@click.pass_context
@translate_errors
def list_command(ctx: click.Context, as_json: bool) -> None:
    """Each schedule with its next fire times and its last run."""
    app_root = app_root_of(ctx)
    entries = _entries(app_root)
    with _client(app_root) as client:
        statuses = [read_status(client, entry) for entry in entries]
    if as_json:
        click.echo(json.dumps({"schedules": msgspec.to_builtins(statuses)}))
        return
    for status in statuses:
        click.echo(_line(status))
    if not statuses:
        click.echo("no schedules (agent/schedules/ declares none)")


def _registered(client: ScheduleRecords, entry: ScheduleEntry) -> None:
    if client.get_schedule(dbos_name(entry.name)) is None:
        raise ScheduleNotFound(
            f"schedule '{entry.name}' is compiled but not registered in the session database "
            "yet: start `eve serve` or `eve dev` once, which registers the agent's schedules",
            name=entry.name,
        )


@schedules_command.command("run")
@click.argument("name")
@click.pass_context
@translate_errors
def run_command(ctx: click.Context, name: str) -> None:
    """Queue a run of NAME now; a running server of the agent runs it."""
    app_root = app_root_of(ctx)
    entry = entry_named(_entries(app_root), name)
    with _client(app_root) as client:
        _registered(client, entry)
        handle = client.trigger_schedule(dbos_name(entry.name))
    click.echo(f"queued {name} ({handle.get_workflow_id()}); a running eve serve or dev runs it")


@schedules_command.command("pause")
@click.argument("name")
@click.pass_context
@translate_errors
def pause_command(ctx: click.Context, name: str) -> None:
    """Stop NAME's ticks from firing (every worker, across restarts) until resumed."""
    _set_paused(app_root_of(ctx), name, paused=True)


@schedules_command.command("resume")
@click.argument("name")
@click.pass_context
@translate_errors
def resume_command(ctx: click.Context, name: str) -> None:
    """Let NAME's ticks fire again."""
    _set_paused(app_root_of(ctx), name, paused=False)


def _set_paused(app_root: Path, name: str, *, paused: bool) -> None:
    entry = entry_named(_entries(app_root), name)
    with _client(app_root) as client:
        _registered(client, entry)
        if paused:
            client.pause_schedule(dbos_name(name))
        else:
            client.resume_schedule(dbos_name(name))
        click.echo(_line(read_status(client, entry)))
