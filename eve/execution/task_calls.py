"""A call that runs as a task, between two parts of its step: ``task.started`` …
``task.settled`` around the turn's task runner (``execution.tasks``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import assert_never

from eve.events import EventData, TaskKind, TaskSettledData, TaskStartedData
from eve.execution.tasks import TaskCall, TaskRunner
from eve.execution.tool_calls import ABORTED_BEFORE_EXECUTION, CallOutcome, outcome
from eve.runtime.resolved import ResolvedSubagent, ResolvedWorkflowTool


async def run_task(
    task: TaskCall, tasks: TaskRunner, emit: Callable[[EventData], Awaitable[None]]
) -> CallOutcome:
    """Run ``task`` (an admitted call of a subagent or workflow tool) to its result."""
    call, tool = task.call, task.tool
    task_id = tasks.task_id(task)
    if task.signal.cancelled:
        # cancelled between parts: the task is not started, so nothing can park on it
        return outcome(call, ABORTED_BEFORE_EXECUTION, "failed")
    match tool:
        case ResolvedSubagent():
            kind: TaskKind = "subagent"
        case ResolvedWorkflowTool():
            kind = "workflow-tool"
        case _:
            assert_never(tool)
    await emit(TaskStartedData(call_id=call.id, name=call.name, kind=kind, task_id=task_id))
    result = await tasks.run(task, task_id)
    settled = TaskSettledData(
        call_id=call.id, name=call.name, task_id=task_id, status=result.status, spend=result.spend
    )
    await emit(settled)
    return result
