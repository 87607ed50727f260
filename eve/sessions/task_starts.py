"""Whether a task can take an event: one that runs, or one its turn is about to start.

A turn publishes ``task.started`` (with the ``task_id``) and then starts the task's
workflow, and the order is kept so that no event of the task can come before it in the log
(a workflow tool's progress, its questions). So a client that sends an event the moment it
reads ``task.started`` can come before the workflow exists: that event waits, up to
``TASK_START_SECONDS``, for the task to start, while the turn runs. An ended task, a task of
a turn that ended, or one that does not start in that time is not waiting
(``TaskNotWaiting``, 409).
"""

from __future__ import annotations

import asyncio
import time

from eve.sessions.engine import ACTIVE_STATUSES, DurableEngine
from eve.sessions.tasks import turn_of

#: how long an event for a task of a running turn waits for the task's workflow to start
TASK_START_SECONDS = 5.0
#: the longest pause between two looks at whether it started
_LONGEST_PAUSE = 0.2


async def task_takes_events(engine: DurableEngine, session_id: str, task_id: str) -> bool:
    """Whether ``task_id`` (a task of ``session_id``) runs, once it has started if its turn
    is about to start it."""
    deadline = time.monotonic() + TASK_START_SECONDS
    pause = 0.01
    while True:
        # the task's own status first: a task that starts between two looks is then seen
        status = await engine.workflow_status(task_id)
        if status is not None:
            return status in ACTIVE_STATUSES
        turns = [workflow_id for workflow_id, _ in await engine.active_turns(session_id)]
        if turn_of(task_id) not in turns or time.monotonic() >= deadline:
            return False
        await asyncio.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE)
