"""Running an agent's turns: ``run_agent`` and what it takes.

::

    from eve.execution import TurnEnvironment, agent_setup, run_agent

    result = await run_agent(agent_setup(client, tools=[...]), "hi",
                             env=TurnEnvironment(on_event=print))

Names load on first use (``eve._lazy``), so importing a submodule such as
``eve.execution.events`` does not load the loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eve._lazy import lazy_attributes

if TYPE_CHECKING:
    from eve.execution.environment import TurnEnvironment
    from eve.execution.events import EventEmitter, EventSink
    from eve.execution.inline_tasks import InlineTasks
    from eve.execution.loop import run_agent
    from eve.execution.recording import Inline, StepRecorder
    from eve.execution.result import RunResult
    from eve.execution.setup import AgentSetup, agent_setup
    from eve.execution.tasks import NoTasks, TaskRunner
    from eve.execution.tool_calls import ApprovalHook, ApprovalRequest
    from eve.execution.transcript import load_transcript

__all__ = [
    "AgentSetup",
    "ApprovalHook",
    "ApprovalRequest",
    "EventEmitter",
    "EventSink",
    "Inline",
    "InlineTasks",
    "NoTasks",
    "RunResult",
    "StepRecorder",
    "TaskRunner",
    "TurnEnvironment",
    "agent_setup",
    "load_transcript",
    "run_agent",
]

_LAZY = {
    "AgentSetup": "eve.execution.setup",
    "agent_setup": "eve.execution.setup",
    "ApprovalHook": "eve.execution.tool_calls",
    "ApprovalRequest": "eve.execution.tool_calls",
    "EventEmitter": "eve.execution.events",
    "EventSink": "eve.execution.events",
    "Inline": "eve.execution.recording",
    "StepRecorder": "eve.execution.recording",
    "InlineTasks": "eve.execution.inline_tasks",
    "NoTasks": "eve.execution.tasks",
    "TaskRunner": "eve.execution.tasks",
    "RunResult": "eve.execution.result",
    "run_agent": "eve.execution.loop",
    "TurnEnvironment": "eve.execution.environment",
    "load_transcript": "eve.execution.transcript",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
