"""Tasks: tool calls that run outside the step that asked for them.

A call of a subagent or of a workflow tool may take long and wait (for a person, for an
event, for another agent's whole turn), so it does not run inside a checkpointed part: the
part stops at it, as at a call that needs a person, the loop publishes ``task.started``
and hands the call to a ``TaskRunner``, and the part after it records the result
(``task.settled``, then ``action.result``) and goes on with the next call. ``InlineTasks``
(``execution.inline_tasks``) runs tasks in this process; a durable session runs each as a
child DBOS workflow, so a parked task holds no compute and survives a restart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from eve._cancellation import CancelSignal
from eve.context.active import EveContext
from eve.execution.events import EventEmitter
from eve.execution.tool_calls import CallOutcome, outcome, result_parts
from eve.messages import ToolCall
from eve.runtime.resolved import TaskTool

#: what separates a task's id from the id of the turn (or task) that started it
TASK_MARK = ":task-"


@dataclass(frozen=True, kw_only=True)
class TaskCall:
    """An admitted call to run as a task, and where it was made."""

    #: the call as it runs (an ``eve__tool`` call already rewritten to its entry)
    call: ToolCall
    tool: TaskTool
    step_index: int
    turn_id: str
    session_id: str
    #: the node whose session made the call
    node_id: str
    #: the caller's eve context: a subagent's runtime configuration is read from it
    context: EveContext
    #: the caller's events: a task's own events join this stream
    emitter: EventEmitter
    signal: CancelSignal


class TaskRunner(Protocol):
    def task_id(self, task: TaskCall) -> str:
        """The task's id, stable for the same call (a recovered turn asks again)."""
        ...

    async def run(self, task: TaskCall, task_id: str) -> CallOutcome:
        """Run the task to its end; its failures are the outcome, not exceptions."""
        ...


class NoTasks:
    """The task runner of a loop given none: every task call fails, saying what to give.

    Running a subagent needs the agent's setup (its nodes) and a workflow tool a place to
    wait, which only the caller knows: ``InlineTasks(setup=...)`` in this process, or a
    durable session (``eve dev``, ``eve serve``).
    """

    def task_id(self, task: TaskCall) -> str:
        return task_id_under(f"{task.session_id}:{task.turn_id}", task)

    async def run(self, task: TaskCall, task_id: str) -> CallOutcome:
        what = "subagent" if task.tool.entry.handling == "subagent" else "workflow tool"
        return outcome(
            task.call,
            f"{task.call.name} is a {what}, and this loop was given no task runner to run "
            "it: pass TurnEnvironment(tasks=InlineTasks(setup=...)) to run_agent, or run "
            "the agent with `eve run`, `eve dev` or `eve serve`",
            "failed",
        )


def task_id_under(parent: str, task: TaskCall) -> str:
    """``<parent>:task-<step>-<call id>``: stable for the same call when a turn is replayed,
    and distinct even when a provider reuses call ids across the steps of a turn."""
    return f"{parent}{TASK_MARK}{task.step_index}-{task.call.id}"


def completed(call: ToolCall, value: object) -> CallOutcome:
    done = outcome(call, result_parts(value), "completed")
    return CallOutcome(result=done.result, status="completed")


def failed(call: ToolCall, error: BaseException) -> CallOutcome:
    return outcome(call, f"{type(error).__name__}: {error}", "failed")
