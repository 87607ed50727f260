"""``InlineTasks``: subagents and workflow tools run in this process, for loops without a
durable session (``eve run``, a bare ``run_agent``). Nothing here survives the process."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import assert_never

from eve.authoring.workflow import AskHook
from eve.context.active import EveContext
from eve.errors import EveError
from eve.execution.setup import AgentSetup
from eve.execution.subagents import (
    child_environment,
    child_node_id,
    child_session_id,
    link,
    run_subagent,
)
from eve.execution.tasks import TaskCall, failed, task_id_under
from eve.execution.tool_calls import ApprovalHook, CallOutcome
from eve.execution.workflow_tools import LocalWaits, run_workflow_tool
from eve.runtime.resolved import ResolvedSubagent, ResolvedWorkflowTool


@dataclass(kw_only=True)
class InlineTasks:
    #: the agent whose subagents may be called (none: subagent calls fail and say why)
    setup: AgentSetup | None = None
    approve: ApprovalHook | None = None
    ask: AskHook | None = None
    workspace: Path = field(default_factory=Path.cwd)

    def task_id(self, task: TaskCall) -> str:
        return task_id_under(f"{task.session_id}:{task.turn_id}", task)

    async def run(self, task: TaskCall, task_id: str) -> CallOutcome:
        match task.tool:
            case ResolvedWorkflowTool():
                workspace = self.setup.workspace if self.setup else self.workspace
                waits = LocalWaits(task=task, task_id=task_id, ask_hook=self.ask)
                return await run_workflow_tool(task, waits, workspace)
            case ResolvedSubagent():
                return await self._delegate(task, task_id)
            case _:
                assert_never(task.tool)

    async def _delegate(self, task: TaskCall, task_id: str) -> CallOutcome:
        node_id = child_node_id(task.node_id, task.call.name)
        try:
            if self.setup is None:
                raise EveError(f"this loop was given no agent setup to run {node_id!r} with")
            child = self.setup.node(node_id)
        except EveError as error:
            return failed(task.call, error)
        session_id = child_session_id(task_id)
        emitter = task.emitter.delegate(
            session_id=session_id, hooks=child.hooks, delegation=link(task, node_id)
        )
        env = child_environment(
            task,
            session_id,
            emitter=emitter,
            # the subagent's turn answers the same message: its principal is the caller's
            context=EveContext(session_id=session_id, principal=task.context.principal),
            approve=self.approve,
            tasks=self,
        )
        run = await run_subagent(task, child, env)
        return run.outcome
