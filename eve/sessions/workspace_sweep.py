"""Retention's sweep of workspace storage: the trees and file contents nothing needs now.

A durable step stores the tree its session's workspace held after it, and the bytes of its
files, in the session store (``workspaces.py``); nothing else deletes them. What may still
need one:

- a session's head (``eve_workspace_heads``): its next turn, a worker without the
  directory, and a fork start from it;
- a step record of a workflow DBOS still keeps: a replay restores the tree it names. Each
  step notes its workflow and tree in ``eve_workspace_refs``; a note goes when DBOS no
  longer has its workflow (retention deleted it just before, or in an earlier run).

The same goes for the MCP call records of a turn (``eve_mcp_calls``): kept while DBOS
keeps its workflow, since only a replay reads them.

A tree is live while a head or a note names it; a blob while a live tree names it. The
rest goes. Forks share trees and blobs by name, so what either session's head or records
need stays.

Why the sweep locks the heads (PostgreSQL; on SQLite its transaction is ``BEGIN
IMMEDIATE``, which serializes writers anyway): a step saving a tree writes the session's
head first, then looks for the tree and its blobs and stores only what is missing. The lock
makes the two take turns: a step that began first is seen whole (its head and note), and
a step that begins during the sweep waits, then finds and stores again what was swept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from dbos import DBOSClient
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

#: ids looked up, read or deleted per statement: parameter lists stay under SQLite's limit
BATCH = 500


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
            if settings.is_postgres and not dry_run:
                c.execute(sa.text(f"LOCK TABLE {workspace_heads.name} IN SHARE MODE"))
            swept = sweep_trees(c, gone=gone if dry_run else set(), dry_run=dry_run)
        return dataclasses.replace(swept, mcp_calls=calls)


def forget_gone_workflows(
    engine: Engine, client: DBOSClient, column: sa.Column[str], *, doomed: set[str], dry_run: bool
) -> tuple[set[str], int]:
    """The workflows ``column`` names that DBOS no longer has (or that the dry run's prune
    would delete), and how many rows name them; unless a dry run, those rows go, a batch
    of workflows per transaction."""
    table = column.table
    with engine.connect() as c:
        noted = list(c.execute(sa.select(column).distinct()).scalars())
    gone: set[str] = set()
    rows = 0
    for chunk in _chunks(noted):
        kept = {
            s.workflow_id
            for s in client.list_workflows(workflow_ids=chunk, load_input=False, load_output=False)
        }
        doomed_here = [w for w in chunk if w not in kept or w in doomed]
        gone.update(doomed_here)
        if not doomed_here:
            continue
        with engine.begin() as c:
            if dry_run:
                counted = sa.select(sa.func.count()).select_from(table)
                rows += c.execute(counted.where(column.in_(doomed_here))).scalar_one()
            else:
                rows += c.execute(sa.delete(table).where(column.in_(doomed_here))).rowcount
    return gone, rows


def sweep_trees(c: Connection, *, gone: set[str], dry_run: bool) -> SweepReport:
    """In one transaction: delete the trees no head or kept note names, then the blobs no
    remaining tree names (``gone``: workflows whose notes count for nothing)."""
    live = set(c.execute(sa.select(workspace_heads.c.tree_id)).scalars())
    live.update(
        tree
        for workflow, tree in c.execute(
            sa.select(workspace_refs.c.workflow_id, workspace_refs.c.tree_id)
        )
        if workflow not in gone
    )
    dead_trees = set(c.execute(sa.select(workspace_trees.c.tree_id)).scalars()) - live
    needed: set[str] = set()
    for chunk in _chunks(sorted(live)):
        for text in c.execute(
            sa.select(workspace_trees.c.tree).where(workspace_trees.c.tree_id.in_(chunk))
        ).scalars():
            needed.update(decode_tree(text).blobs())
    sizes = sa.select(workspace_blobs.c.sha256, sa.func.length(workspace_blobs.c.data))
    dead_blobs = {sha: int(size) for sha, size in c.execute(sizes) if sha not in needed}
    if not dry_run:
        for chunk in _chunks(sorted(dead_trees)):
            c.execute(sa.delete(workspace_trees).where(workspace_trees.c.tree_id.in_(chunk)))
        for chunk in _chunks(sorted(dead_blobs)):
            c.execute(sa.delete(workspace_blobs).where(workspace_blobs.c.sha256.in_(chunk)))
    return SweepReport(
        trees=len(dead_trees), blobs=len(dead_blobs), freed_bytes=sum(dead_blobs.values())
    )


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
        engine.dispose()
