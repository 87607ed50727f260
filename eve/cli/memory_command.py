"""``eve memory``: what the agent remembers, listed, searched and forgotten by an operator.

Reads the compiled manifest for the agent's slots and opens their stores where ``eve
serve`` would (``--database``, else the environment, else ``.eve/sessions``). With
``--principal KIND:ID`` only what that principal saved or what is about them: how an
operator honours a person's request to be forgotten (``forget --all --principal``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import msgspec

from eve.cli.errors import translate_errors
from eve.cli.main import app_root_of
from eve.cli.principal_option import parse_principal
from eve.cli.sessions_command import settings_for
from eve.errors import MemorySlotUnknown
from eve.manifest import MANIFEST_PATH
from eve.memory.access import MemoryAdmin, MemoryHost
from eve.memory.records import MemoryRecord
from eve.runtime.load import read_manifest


def _admin(app_root: Path, database: str | None) -> MemoryAdmin:
    path = app_root / MANIFEST_PATH
    if not path.exists():
        raise MemorySlotUnknown(
            f"no compiled agent in {app_root} (run eve compile): its memory slots are unknown",
            slot="",
        )
    entries = [e for node in read_manifest(path).nodes.values() for e in node.memory]
    url = settings_for(app_root, database).eve_url
    return MemoryAdmin(MemoryHost(app_root=app_root, database_url=url), entries)


def _line(record: MemoryRecord) -> str:
    when = datetime.fromtimestamp(record.updated_at, UTC).isoformat(timespec="seconds")
    who = f"{record.principal.kind}:{record.principal.id}"
    return f"{record.id}  {record.slot}/{record.scope}  {when}  {who}\n    {record.text}"


def _show(records: list[MemoryRecord], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(msgspec.to_builtins(records)))
        return
    for record in records:
        click.echo(_line(record))
    if not records:
        click.echo("no memories", err=True)


_database = click.option(
    "--database", metavar="URL", help="A postgresql:// URL instead of the one eve serve would use."
)
_slot = click.option("--slot", metavar="NAME", help="Only this memory slot.")
_as = click.option(
    "--principal",
    "principal",
    metavar="KIND:ID",
    help="Only what this principal saved or what is about them (user:<id>, channel:<id>).",
)
_limit = click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
_json = click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON.")


@click.group("memory")
def memory_command() -> None:
    """Inspect and erase what the agent remembers."""


def _listing(fn: Callable[..., None]) -> Callable[..., None]:
    """The options ``list`` and ``search`` share, and the error translation."""
    for option in (_json, _database, _limit, _as, _slot):
        fn = option(fn)
    return translate_errors(fn)


def _show_inspected(ctx: click.Context, query: str | None, options: dict[str, Any]) -> None:
    admin = _admin(app_root_of(ctx), options["database"])
    principal = parse_principal(options["principal"])
    found = admin.inspect(principal, slot=options["slot"], query=query, limit=options["limit"])
    _show(found, options["as_json"])


@memory_command.command("list")
@_listing
@click.pass_context
def list_command(ctx: click.Context, /, **options: Any) -> None:
    """The most recently changed entries."""
    _show_inspected(ctx, None, options)


@memory_command.command("search")
@click.argument("query")
@_listing
@click.pass_context
def search_command(ctx: click.Context, /, query: str, **options: Any) -> None:
    """The entries that best match QUERY (keyword search)."""
    _show_inspected(ctx, query, options)


@memory_command.command("forget")
@click.argument("ids", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Every entry the filters admit.")
@_slot
@_as
@_database
@click.pass_context
@translate_errors
def forget_command(
    ctx: click.Context,
    ids: tuple[str, ...],
    everything: bool,
    slot: str | None,
    principal: str | None,
    database: str | None,
) -> None:
    """Forget the entries IDS, or --all of a --slot or a --principal."""
    if bool(ids) == everything:
        raise click.UsageError("name the entries to forget, or --all (not both)")
    if everything and slot is None and principal is None:
        raise click.UsageError("--all needs --slot or --principal: what to forget everything of")
    admin = _admin(app_root_of(ctx), database)
    erased = admin.erase(parse_principal(principal), slot=slot, ids=list(ids) if ids else None)
    click.echo(f"forgot {erased} memor{'y' if erased == 1 else 'ies'}")
    if ids and erased < len(ids):
        ctx.exit(1)
