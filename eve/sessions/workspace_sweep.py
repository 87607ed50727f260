"""Retention's sweep of workspace storage: the trees and file contents nothing needs now.

A durable step stores the tree its session's workspace held after it, and the bytes of its
files, in the session store (``workspaces.py``); nothing else deletes them. What may still
need one:

- a session's head (``eve_workspace_heads``): its next turn, a worker without the
  directory, and a fork start from it;
- a step record of a workflow DBOS still keeps: a replay restores the tree it names. Each
  step notes its workflow and tree in ``eve_workspace_refs``; a note goes when DBOS no
  longer has its workflow (retention deleted it just before, or in an earlier run). A step
  of an eve from before the notes wrote none: the sweep first notes what the records of
  every active workflow name (``workspace_backfill.py``).

The same goes for the MCP call records of a turn (``eve_mcp_calls``): kept while DBOS
keeps its workflow, since only a replay reads them.

A tree is live while a head or a note names it; a blob while a live tree names it. The
rest goes. Forks share trees and blobs by name, so what either session's head or records
need stays. Which trees and blobs those are is worked out in the database (temporary
tables and anti-joins): the sweep's memory does not grow with the store.

Why the sweep locks the heads (PostgreSQL; on SQLite its transaction is ``BEGIN
IMMEDIATE`` from its first write on, which serializes writers anyway): a step saving a
tree writes the session's head first, then looks for the tree and its blobs and stores
only what is missing. The lock makes the two take turns: a step that began first is seen
whole (its head and note), and a step that begins during the sweep waits, then finds and
stores again what was swept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from dbos import DBOSClient
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.engine import Connection, Engine

from eve.sandbox.snapshot import decode_tree
from eve.sessions.settings import SessionSettings
from eve.sessions.sqlite import sqlite_engine
from eve.sessions.tables import (
    create_tables,
    mcp_calls,
    workspace_blobs,
    workspace_heads,
    workspace_refs,
    workspace_trees,
)
from eve.sessions.wal_checkpoints import dispose_engine
from eve.sessions.workspace_backfill import note_active_workflows

#: ids looked up, read or deleted per statement: parameter lists stay under SQLite's limit
BATCH = 500
#: trees decoded at once (a tree of many files is large)
TREE_PAGE = 64

# the sweep's scratch tables, private to its connection (``sweep_trees``)
_scratch = sa.MetaData()


def _scratch_table(name: str, key: sa.Column[Any]) -> sa.Table:
    return sa.Table(name, _scratch, key, prefixes=["TEMPORARY"])


_gone = _scratch_table("eve_sweep_gone", sa.Column("workflow_id", sa.String(255), primary_key=True))
_live = _scratch_table("eve_sweep_live", sa.Column("tree_id", sa.String(64), primary_key=True))
_needed = _scratch_table("eve_sweep_needed", sa.Column("sha256", sa.String(64), primary_key=True))
#: on SQLite, the needed blobs by their rowid (see ``_needed_blob``)
_needed_rows = _scratch_table(
    "eve_sweep_needed_rows", sa.Column("id", sa.Integer, primary_key=True)
)
_SCRATCH = (_gone, _live, _needed, _needed_rows)
#: a blob's row on SQLite: stable while the sweep holds the write lock
_BLOB_ROW: sa.ColumnClause[int] = sa.literal_column(f"{workspace_blobs.name}.rowid", sa.Integer())


@dataclass(frozen=True, kw_only=True)
class SweepReport:
    """Workspace storage a sweep deleted (or, in a dry run, would delete)."""

    trees: int = 0
    blobs: int = 0
    #: the bytes of the deleted blobs' contents
    freed_bytes: int = 0
    #: MCP call records (``eve_mcp_calls``) of workflows DBOS no longer keeps
    mcp_calls: int = 0

    def as_json(self) -> dict[str, int]:
        return {"trees": self.trees, "blobs": self.blobs, "bytes": self.freed_bytes}


def sweep_workspaces(
    settings: SessionSettings, client: DBOSClient, *, dry_run: bool, doomed: set[str]
) -> SweepReport:
    """Delete the workspace trees and blobs nothing may need (see the module docstring).
    ``doomed``: in a dry run, the workflows the prune would have deleted (gone, for this)."""
    if not settings.is_postgres and not Path(settings.eve_url.removeprefix("sqlite:///")).exists():
        return SweepReport()  # no session ever ran here
    with eve_engine(settings) as engine:
        forget = functools.partial(
            forget_gone_workflows, engine, client, doomed=doomed, dry_run=dry_run
        )
        gone, _ = forget(workspace_refs.c.workflow_id)
        # a turn's MCP call records (``mcp_calls.py``) matter only while it may run again
        _, calls = forget(mcp_calls.c.workflow_id)
        with engine.begin() as c:
            if c.execute(sa.select(workspace_trees.c.tree_id).limit(1)).first() is None:
                return SweepReport(mcp_calls=calls)  # no sandboxed step ever ran here
            if settings.is_postgres and not dry_run:
                c.execute(sa.text(f"LOCK TABLE {workspace_heads.name} IN SHARE MODE"))
            # under the lock: a step of an old worker that ran before it has its record in
            # DBOS, or names the head (a dry run notes too: the notes only say what the
            # records do, and a real sweep needs them)
            note_active_workflows(c, client)
            swept = sweep_trees(c, gone=gone, dry_run=dry_run)
        return dataclasses.replace(swept, mcp_calls=calls)


def forget_gone_workflows(
    engine: Engine, client: DBOSClient, column: sa.Column[str], *, doomed: set[str], dry_run: bool
) -> tuple[set[str], int]:
    """In a dry run, the workflows ``column`` names that DBOS no longer has (or that the
    prune would delete); and how many rows name them. Unless a dry run, those rows go, a
    batch of workflows per transaction (and none is kept in memory)."""
    table = column.table
    gone: set[str] = set()
    rows = 0
    after = ""
    while True:  # a page of workflow ids at a time, in order: a delete leaves the rest
        page = sa.select(column).distinct().where(column > after).order_by(column).limit(BATCH)
        with engine.connect() as c:
            chunk = list(c.execute(page).scalars())
        if not chunk:
            return gone, rows
        after = chunk[-1]
        kept = {
            s.workflow_id
            for s in client.list_workflows(workflow_ids=chunk, load_input=False, load_output=False)
        }
        doomed_here = [w for w in chunk if w not in kept or w in doomed]
        if not doomed_here:
            continue
        with engine.begin() as c:
            if dry_run:
                gone.update(doomed_here)
                counted = sa.select(sa.func.count()).select_from(table)
                rows += c.execute(counted.where(column.in_(doomed_here))).scalar_one()
            else:
                rows += c.execute(sa.delete(table).where(column.in_(doomed_here))).rowcount


def sweep_trees(c: Connection, *, gone: set[str], dry_run: bool) -> SweepReport:
    """In one transaction: delete the trees no head or kept note names, then the blobs no
    remaining tree names (``gone``: workflows whose notes count for nothing).

    What is live and needed is worked out in the database (temporary tables and
    anti-joins), never as a set of every tree id or blob hash in memory: a store of a
    million files costs this process a page of trees at a time."""
    for table in _SCRATCH:
        # left by a run that failed on this (pooled) connection
        c.execute(sa.text(f"DROP TABLE IF EXISTS {table.name}"))
        table.create(c)
    for chunk in _chunks(sorted(gone)):
        c.execute(sa.insert(_gone), [{"workflow_id": w} for w in chunk])
    # on SQLite the first write of the transaction is what takes the write lock: this one
    # reads the heads, so they are read under it
    noted = sa.select(workspace_refs.c.tree_id).where(
        ~sa.exists().where(_gone.c.workflow_id == workspace_refs.c.workflow_id)
    )
    live = sa.union(sa.select(workspace_heads.c.tree_id), noted)
    c.execute(sa.insert(_live).from_select(["tree_id"], live))
    _note_needed_blobs(c)
    dead_tree = ~sa.exists().where(_live.c.tree_id == workspace_trees.c.tree_id)
    dead_blob = ~_needed_blob(c)
    trees = c.execute(
        sa.select(sa.func.count()).select_from(workspace_trees).where(dead_tree)
    ).scalar_one()
    size = sa.func.coalesce(sa.func.sum(sa.func.length(workspace_blobs.c.data)), 0)
    blobs, freed = c.execute(sa.select(sa.func.count(), size).where(dead_blob)).one()
    if not dry_run:
        c.execute(sa.delete(workspace_trees).where(dead_tree))
        c.execute(sa.delete(workspace_blobs).where(dead_blob))
    for table in reversed(_SCRATCH):
        table.drop(c)
    return SweepReport(trees=int(trees), blobs=int(blobs), freed_bytes=int(freed))


def _needed_blob(c: Connection) -> sa.Exists:
    """A blob is needed: by its hash on PostgreSQL (a hash anti-join), by its rowid on
    SQLite, whose anti-join probes the needed table once per blob: probing integers took
    a tenth of the time probing 64-character hashes did (600,000 blobs)."""
    if c.dialect.name == "sqlite":
        return sa.exists().where(_needed_rows.c.id == _BLOB_ROW)
    return sa.exists().where(_needed.c.sha256 == workspace_blobs.c.sha256)


#: the rows of the blobs ``shas`` names, noted as needed (one statement, its list a
#: parameter: a statement built per call holds its list until the garbage collector runs)
_NOTE_ROWS = (
    sa.insert(_needed_rows)
    .from_select(
        ["id"],
        sa.select(_BLOB_ROW)
        .select_from(workspace_blobs)
        .where(workspace_blobs.c.sha256.in_(sa.bindparam("shas", expanding=True))),
    )
    .prefix_with("OR IGNORE")
)


def _note_needed(c: Connection, shas: list[str]) -> None:
    if c.dialect.name == "sqlite":
        c.execute(_NOTE_ROWS, {"shas": shas})
    else:
        insert = postgres_insert(_needed).on_conflict_do_nothing()
        c.execute(insert, [{"sha256": sha} for sha in shas])


def _note_needed_blobs(c: Connection) -> None:
    """Note the blobs the live trees name as needed, a page of trees at a time."""
    after = ""
    while True:
        page = c.execute(
            sa.select(workspace_trees.c.tree_id, workspace_trees.c.tree)
            .join(_live, _live.c.tree_id == workspace_trees.c.tree_id)
            .where(workspace_trees.c.tree_id > after)
            .order_by(workspace_trees.c.tree_id)
            .limit(TREE_PAGE)
        ).all()
        if not page:
            return
        after = page[-1][0]
        shas = sorted({sha for _, text in page for sha in decode_tree(text).blobs()})
        for chunk in _chunks(shas):
            _note_needed(c, chunk)


def _chunks(items: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), BATCH):
        yield items[start : start + BATCH]


@contextlib.contextmanager
def eve_engine(settings: SessionSettings) -> Iterator[Engine]:
    """An engine on eve's tables; on SQLite its transactions take the write lock at BEGIN."""
    if settings.is_postgres:
        engine = sa.create_engine(settings.eve_url, pool_size=1, max_overflow=0)
    else:
        engine = sqlite_engine(
            settings.eve_url,
            synchronous=settings.sqlite_synchronous,
            immediate=True,
            busy_timeout=settings.sqlite_busy_timeout,
        )
    try:
        create_tables(engine)  # a database an older eve made lacks the notes' table
        yield engine
    finally:
        dispose_engine(engine)
