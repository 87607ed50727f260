"""Notes for the workspace trees that active workflows' step records name but no note does.

A step notes its workflow and tree in ``eve_workspace_refs`` when it runs (``workspaces.py``),
and retention's sweep keeps a tree while a note of a workflow DBOS keeps names it
(``workspace_sweep.py``). A step run by an eve from before the notes wrote none: a turn
parked before the upgrade, or run meanwhile by a worker not yet upgraded (a rolling deploy),
would lose every tree its records name that no session head names too, and its replay
would then fail to restore them. So before each sweep this reads the records of every
workflow that may still run or replay (pending, enqueued, delayed: a finished one is never
replayed), in DBOS's step outputs (where an eve from before ``eve_step_records`` kept
them) and in eve's own table, and notes what they name. Notes already there cost a
lookup; what is read stays bounded (a page of steps at a time).
"""

from __future__ import annotations

import msgspec
import sqlalchemy as sa
from dbos import DBOSClient
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection

from eve.sessions.tables import step_records, workspace_refs

#: the workflow statuses whose steps may still be replayed
ACTIVE = ["PENDING", "ENQUEUED", "DELAYED"]
#: steps read at once: a record holds the session state, so a page is kept small
STEP_PAGE = 50


class _NamedTree(msgspec.Struct):
    """The one field of a step record (``checkpoint.StepCheckpoint``, any format version)
    this reads; the rest is skipped unparsed."""

    workspace: str | None = None


_named = msgspec.json.Decoder(_NamedTree)


def note_active_workflows(c: Connection, client: DBOSClient) -> int:
    """Note, in ``c``'s transaction, each tree an active workflow's step records name and
    no note does yet; how many notes were added."""
    added = 0
    for status in client.list_workflows(status=ACTIVE, load_input=False, load_output=False):
        named = _trees_named(client, status.workflow_id) | _trees_recorded(c, status.workflow_id)
        if not named:
            continue
        noted = set(
            c.execute(
                sa.select(workspace_refs.c.tree_id).where(
                    workspace_refs.c.workflow_id == status.workflow_id
                )
            ).scalars()
        )
        missing = sorted(named - noted)
        if missing:
            rows = [{"workflow_id": status.workflow_id, "tree_id": tree} for tree in missing]
            # a step of the workflow may note the same tree meanwhile (on SQLite the sweep's
            # write lock is taken at its first write): either note will do
            insert = postgres_insert if c.dialect.name == "postgresql" else sqlite_insert
            c.execute(insert(workspace_refs).on_conflict_do_nothing(), rows)
            added += len(missing)
    return added


def _trees_named(client: DBOSClient, workflow_id: str) -> set[str]:
    named: set[str] = set()
    offset = 0
    while True:
        steps = client.list_workflow_steps(workflow_id, limit=STEP_PAGE, offset=offset)
        for step in steps:
            tree = _tree_of(step["output"])
            if tree is not None:
                named.add(tree)
        if len(steps) < STEP_PAGE:
            return named
        offset += len(steps)


def _trees_recorded(c: Connection, workflow_id: str) -> set[str]:
    """The trees eve's own records of ``workflow_id`` name (``step_records.py``): a step
    writes its note with its record, so this finds none missing unless a note was lost."""
    rows = c.execute(
        sa.select(step_records.c.record).where(step_records.c.workflow_id == workflow_id)
    ).scalars()
    return {tree for record in rows if (tree := _tree_of(record)) is not None}


def _tree_of(output: object) -> str | None:
    """The tree a step's output names; None for an output that is not a step record (a
    turn's bookkeeping steps return other values)."""
    if not isinstance(output, bytes | str):
        return None
    try:
        return _named.decode(output).workspace
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
