"""Session workspaces on a worker's disk: each goes once nothing will use it soon.

A sandboxed session's directory (``<workspace root>/sessions/<session id>``) is a copy:
what its steps left is in the session store (``workspaces.py``), and a turn's start
restores the directory from the session's head whether it is there or not. So a worker
may remove it whenever no turn of the session is queued, running or parked, and an
``eve serve`` worker does, every ``EVERY_SECONDS``:

- an ended session's directory (no turn of it will run again; a fork starts from its head
  in the store);
- a session's directory unused for ``EVE_WORKSPACE_IDLE`` (default a day; ``off`` keeps
  them): its next turn restores it.

"Unused" is the directory's modification time, which opening it for a turn and each step's
checkpoint move (``WorkspaceKeeper.touch``).

A sandboxed subagent's directory is its child session's, which has no session row: its id
is a hash of its task's workflow id (``child_session_id``), which starts with the id of the
session whose turn called it. So the pass hashes the task ids DBOS keeps to find each child
directory's session, and removes the directory as that session's would be: once it ended,
or the directory is unused for the idle period, and never while a turn of it (whose tasks'
ids start with its own) is busy. A task that runs again restores the directory from the
child session's head, as a turn does. A directory whose task DBOS no longer keeps, nor any
session row names, is left alone.

Why a lock: the check (no turn busy) and the removal must not straddle a turn's start.
Opening a workspace holds a shared ``flock`` on the ``sessions`` directory
(``workspace_lock``); the removal holds it exclusively from the check to the last file. A
turn that starts meanwhile waits, then restores the directory from the head; one that had
started is busy by then (DBOS lists it as queued or pending) and its directory stays.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from dbos import DBOS

from eve.execution.subagents import child_session_id
from eve.sandbox.bindings import SESSIONS_DIR
from eve.sessions.retention import parse_period
from eve.sessions.store import SessionStore
from eve.sessions.tasks import TASK_WORKFLOW
from eve.sessions.workspace_backfill import ACTIVE
from eve.sessions.workspaces import workspace_lock

log = logging.getLogger("eve.sessions")

IDLE_ENV = "EVE_WORKSPACE_IDLE"
DEFAULT_IDLE = "1d"
#: how often an ``eve serve`` worker looks
EVERY_SECONDS = 600.0


def configured_idle(env: Mapping[str, str]) -> float | None:
    """``EVE_WORKSPACE_IDLE`` in seconds (a day when unset); None for ``off``."""
    raw = env.get(IDLE_ENV, "").strip() or DEFAULT_IDLE
    return parse_period(raw, source=IDLE_ENV)


def remove_unused(
    store: SessionStore,
    workspace_root: Path,
    *,
    idle_after: float | None,
    busy: Callable[[str], bool],
    tasks: Callable[[], Iterable[str]] | None = None,
    now: float | None = None,
) -> list[str]:
    """Remove the directories of ``workspace_root``'s sessions that are ended or unused for
    ``idle_after`` seconds (None: only ended ones) and have no turn ``busy``; their ids.
    A child session's directory goes as the session that called it would (``tasks``: the
    task workflow ids kept, read once and only when a directory has no session row)."""
    now = time.time() if now is None else now
    sessions = workspace_root.resolve() / SESSIONS_DIR
    if not sessions.is_dir():
        return []
    callers = _Callers(tasks or kept_tasks)
    removed = []
    for directory in sorted(sessions.iterdir()):
        # ".<id>.<hex>": a workspace being seeded (``seed_workspace``), renamed when whole
        if directory.name.startswith(".") or not directory.is_dir():
            continue
        with workspace_lock(workspace_root, exclusive=True):
            if not directory.is_dir():
                continue  # another worker sharing the disk removed it meanwhile
            unused = _unused(store, directory, idle_after=idle_after, now=now, callers=callers)
            if unused and not busy(unused):
                shutil.rmtree(directory, ignore_errors=True)
                removed.append(directory.name)
    return removed


class _Callers:
    """Which session each child session's task runs under, from the kept task ids, hashed
    once per pass and only if a directory needs it."""

    def __init__(self, tasks: Callable[[], Iterable[str]]) -> None:
        self._tasks = tasks
        self._found: dict[str, str] | None = None

    def of(self, child_id: str) -> str | None:
        if self._found is None:
            # a task id is ``<session>:turn-<n>:task-...`` (nested: more ``:task-...``)
            self._found = {child_session_id(t): t.split(":", 1)[0] for t in self._tasks()}
        return self._found.get(child_id)


def _unused(
    store: SessionStore,
    directory: Path,
    *,
    idle_after: float | None,
    now: float,
    callers: _Callers,
) -> str | None:
    """The session whose turns must not be busy for ``directory`` to go (its own, or the
    one that called its child session), or None when it stays anyway."""
    owner = directory.name
    row = store.get_session(owner)
    if row is None:
        caller = callers.of(owner)
        if caller is None:
            return None
        owner, row = caller, store.get_session(caller)
    idle = idle_after is not None and directory.stat().st_mtime < now - idle_after
    # a caller deleted meanwhile (retention) runs no turn again: its child's copy can go
    ended = row is None or row.status == "ended"
    return owner if ended or idle else None


def kept_tasks() -> list[str]:
    """The ids of the task workflows DBOS keeps (launched in this process)."""
    found = DBOS.list_workflows(name=TASK_WORKFLOW, load_input=False, load_output=False)
    return [status.workflow_id for status in found]


def turn_busy(session_id: str) -> bool:
    """A turn, reset or compaction of ``session_id`` is queued, running or parked (DBOS must
    be launched in this process: an ``eve serve`` worker)."""
    found = DBOS.list_workflows(
        workflow_id_prefix=f"{session_id}:", status=ACTIVE, load_input=False, load_output=False
    )
    return bool(found)


async def remove_periodically(
    store: SessionStore,
    roots: Callable[[], list[Path]],
    *,
    idle_after: float | None,
    every: float = EVERY_SECONDS,
) -> None:
    """``remove_unused`` over ``roots()`` now and every ``every`` seconds, until cancelled."""
    while True:
        for root in roots():
            try:
                removed = await asyncio.to_thread(
                    remove_unused, store, root, idle_after=idle_after, busy=turn_busy
                )
            except Exception as error:
                # a database blip, a file in use: the next round tries again, and the
                # worker's other work goes on (an escaped error would end this loop)
                log.warning("removing unused workspaces under %s failed: %s", root, error)
            else:
                if removed:
                    log.info("removed %d unused session workspace(s) under %s", len(removed), root)
        await asyncio.sleep(every)
