"""Tasks in a durable session: each subagent call and workflow tool is a child workflow.

The turn workflow starts the child with an id derived from its own and the call's
(``<turn workflow>:task-<step>-<call id>``) and waits for its result; a recovered turn starts
the same id again and DBOS hands back the existing child instead of a second one. The
child is recovered on its own like any workflow, so a task parked on a person, an event
or a long sleep holds no compute and survives restarts; it is answered through the same
session API as the turn. Its events go into the root session's log, each carrying its
place in the tree (``node_id`` and ``parent`` for a subagent's session).

Messages to a task (answers, events, cancel) arrive on its mailbox (``mailbox.py``), which
keeps the ones a body is not waiting for yet.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import msgspec
from dbos import DBOS, SetWorkflowID

from eve._cancellation import CancelSignal
from eve._redact import redact
from eve.auth.principal import OPERATOR, Principal
from eve.authoring.workflow import Question
from eve.context.active import EveContext
from eve.errors import TaskCancelled
from eve.events import Delegation
from eve.execution.events import EventEmitter
from eve.execution.setup import AgentSetup
from eve.execution.subagents import (
    child_environment,
    child_node_id,
    child_session_id,
    link,
    run_subagent,
)
from eve.execution.tasks import TASK_MARK, TaskCall, task_id_under
from eve.execution.tool_calls import CallOutcome, outcome
from eve.execution.workflow_tools import progress_of, question_request, run_workflow_tool
from eve.messages import ToolCall
from eve.runtime.resolved import ResolvedSubagent, ResolvedWorkflowTool, is_task
from eve.sessions.compute_gate import ComputeGate
from eve.sessions.durable_steps import DurableRecorder
from eve.sessions.event_log import EventLog
from eve.sessions.form_requests import DurableForms
from eve.sessions.input_requests import DurableApproval, InputDesk, request_id_for
from eve.sessions.mailbox import M, Mailbox
from eve.sessions.mcp_calls import DurableSentCalls
from eve.sessions.store import SessionStore
from eve.sessions.turn_events import TurnEvents
from eve.sessions.workspaces import keeper_for
from eve.wire.mailbox import AnswerMail, CancelMail, EventMail

T = TypeVar("T")

TASK_WORKFLOW = "eve.task"


def turn_of(workflow_id: str) -> str:
    """The turn workflow a task workflow belongs to (a turn's own id for a turn)."""
    return workflow_id.split(TASK_MARK, 1)[0]


class TaskSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What a task workflow is started with (stored by DBOS: redacted)."""

    #: the session the person and the API talk to: its log and its input requests
    root_session_id: str
    #: the session whose call this is, its node, turn and step, and its events' tags
    session_id: str
    node_id: str
    turn_id: str
    step_index: int
    #: the link the caller's events carry (a task of a subagent's session)
    delegation: Delegation | None = None
    call: ToolCall
    #: the caller's context values a subagent's runtime configuration is read from
    config: dict[str, Any] = {}
    #: who sent the turn's message: the task's ``ctx.principal``, and whom its requests
    #: belong to (the operator, for a task an eve from before principals started)
    principal: Principal = OPERATOR


class TaskHost(Protocol):
    """What task workflows run with in this process (the ``TurnRuntime``)."""

    setup: AgentSetup
    store: SessionStore
    log: EventLog
    gate: ComputeGate
    running: dict[str, CancelSignal]

    async def events_of(self, session_id: str, workflow_id: str) -> TurnEvents: ...

    def signal_for(
        self, workflow_id: str, *, asked: bool | None = None
    ) -> AbstractAsyncContextManager[CancelSignal]: ...

    def tracked(self) -> AbstractAsyncContextManager[None]: ...


@dataclass(kw_only=True)
class DurableTasks:
    """The loop's task runner inside a turn (or task) workflow."""

    root_session_id: str
    workflow_id: str

    def task_id(self, task: TaskCall) -> str:
        return task_id_under(self.workflow_id, task)

    async def run(self, task: TaskCall, task_id: str) -> CallOutcome:
        config: dict[str, Any] = {}
        if isinstance(task.tool, ResolvedSubagent):
            child = _host().setup.node(child_node_id(task.node_id, task.call.name))
            key = child.agent.config.runtime_config
            if key is not None and key in task.context.values:
                # the child reads its configuration from this, not from a live context
                encoded_values = task.context.snapshot()
                config = {key: encoded_values.get(key, task.context.values[key])}
        spec = TaskSpec(
            root_session_id=self.root_session_id,
            session_id=task.session_id,
            node_id=task.node_id,
            turn_id=task.turn_id,
            step_index=task.step_index,
            delegation=task.emitter.delegation,
            call=task.call,
            config=config,
            principal=task.context.principal,
        )
        encoded = redact(msgspec.json.encode(spec).decode())
        with SetWorkflowID(task_id):
            handle = await DBOS.start_workflow_async(task_workflow, encoded)
        result: str = await handle.get_result()
        return msgspec.json.decode(result, type=CallOutcome)


@dataclass(kw_only=True)
class DurableWaits:
    """A workflow tool's waits as DBOS operations of its task workflow."""

    task: TaskCall
    task_id: str
    desk: InputDesk
    mailbox: Mailbox
    asked: int = 0
    waited: int = 0

    async def _next(
        self, kind: type[M], wanted: Callable[[M], bool], timeout: float | None
    ) -> M | None:
        """The first message of ``kind`` that ``wanted`` accepts; None after ``timeout``
        seconds in all; ``TaskCancelled`` when the turn was cancelled."""
        if self.task.signal.cancelled:
            raise TaskCancelled("the turn was cancelled before the tool waited")
        if (kept := self.mailbox.kept_one(kind, wanted)) is not None:
            return kept
        deadline = None
        if timeout is not None:
            self.waited += 1
            # recorded, so a replay waits until the same moment rather than afresh
            start: float = await DBOS.run_step_async(
                {"name": f"wait.start:{self.waited}"}, time.time
            )
            deadline = start + timeout
        got = await self.mailbox.receive(kind, wanted, deadline=deadline)
        if isinstance(got, CancelMail):
            raise TaskCancelled("the turn was cancelled while the tool waited")
        return got

    async def sleep(self, seconds: float) -> None:
        # a recv with a timeout is a durable sleep that a cancel can still interrupt
        await self._next(EventMail, lambda message: False, seconds)

    async def wait_for_event(self, name: str, timeout: float | None) -> Any:
        message = await self._next(EventMail, lambda m: m.name == name, timeout)
        return None if message is None else message.data

    async def ask(self, question: Question) -> str:
        self.asked += 1
        request_id = request_id_for(self.task_id, f"ask-{self.asked}")

        async def answer(request_id: str) -> AnswerMail | None:
            try:
                return await self._next(AnswerMail, lambda m: m.request_id == request_id, None)
            except TaskCancelled:
                return None

        option = await self.desk.ask(
            question_request(request_id, question, self.task_id), question.options, answer
        )
        if option is None:
            raise TaskCancelled("the turn was cancelled while the tool asked a person")
        return option

    async def progress(self, value: Any) -> None:
        await progress_of(self.task, value)

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        async def once() -> T:
            async with _host().gate.held():
                return await fn()

        # events a step's function emits would get body positions a replay (which does not
        # run it) never gives them again; docs/workflow-tools.md says to emit outside steps
        result: T = await DBOS.run_step_async({"name": f"tool.step:{name}"}, once)
        return result


async def run_task(host: TaskHost, encoded: str) -> str:
    """The body of a task workflow: run the call, return its outcome as JSON."""
    spec = msgspec.json.decode(encoded, type=TaskSpec)
    task_id = DBOS.workflow_id or ""
    events = await host.events_of(spec.root_session_id, task_id)
    caller = host.setup.node(spec.node_id)
    # the caller's hooks see the tool's events, as they do when the task runs in process
    emitter = EventEmitter(
        events, session_id=spec.session_id, hooks=caller.hooks, delegation=spec.delegation
    )
    tool = caller.agent.tool(spec.call.name)
    # whether its turn was asked to cancel was read with its progress
    async with host.signal_for(task_id, asked=events.progress.cancel_requested) as signal:
        if tool is None or not is_task(tool):
            result = outcome(spec.call, f"{spec.call.name} is no task of {spec.node_id}", "failed")
        else:
            task = TaskCall(
                call=spec.call,
                tool=tool,
                step_index=spec.step_index,
                turn_id=spec.turn_id,
                session_id=spec.session_id,
                node_id=spec.node_id,
                context=EveContext(
                    session_id=spec.session_id,
                    values=dict(spec.config),
                    principal=spec.principal,
                ),
                emitter=emitter,
                signal=signal,
            )
            result = await _run(host, spec, task, task_id, events)
    await events.flush()
    # DBOS stores the result: no known secret in it, as in a step's record
    return redact(msgspec.json.encode(result).decode())


async def _run(
    host: TaskHost,
    spec: TaskSpec,
    task: TaskCall,
    task_id: str,
    events: TurnEvents,
) -> CallOutcome:
    def desk(emitter: EventEmitter) -> InputDesk:
        # a person answers through the root session, whatever depth asks
        return InputDesk(
            store=host.store,
            session_id=spec.root_session_id,
            workflow_id=task_id,
            turn_id=spec.turn_id,
            emitter=emitter,
            events=events,
            principal=spec.principal,
        )

    if isinstance(task.tool, ResolvedWorkflowTool):
        waits = DurableWaits(
            task=task, task_id=task_id, desk=desk(task.emitter), mailbox=Mailbox(signal=task.signal)
        )
        workspace: Path = host.setup.node(spec.node_id).workspace
        return await run_workflow_tool(task, waits, workspace)
    node_id = child_node_id(spec.node_id, task.call.name)
    child = host.setup.node(node_id)
    session_id = child_session_id(task_id)
    child_emitter = EventEmitter(
        events, session_id=session_id, hooks=child.hooks, delegation=link(task, node_id)
    )
    # the subagent's turn answers the same message: its principal is the caller's
    context = EveContext(session_id=session_id, principal=spec.principal)
    # a sandboxed subagent's workspace is its child session's, kept as the root's is
    keeper = keeper_for(host.store, child.workspace, node_id, session_id)
    if keeper is not None:
        await asyncio.to_thread(keeper.open)
    env = child_environment(
        task,
        session_id,
        emitter=child_emitter,
        context=context,
        approve=DurableApproval(desk(child_emitter), task.signal),
        tasks=DurableTasks(root_session_id=spec.root_session_id, workflow_id=task_id),
        recorder=DurableRecorder(events, context, gate=host.gate, workspace=keeper),
        forms=DurableForms(desk=desk(child_emitter), signal=task.signal),
        sent_calls=DurableSentCalls(desk=desk(child_emitter)),
    )
    run = await run_subagent(task, child, env)
    return run.outcome


_host_now: TaskHost | None = None


def install_host(host: TaskHost | None) -> None:
    global _host_now
    _host_now = host


def _host() -> TaskHost:
    if _host_now is None:
        raise RuntimeError("eve's task runtime is not installed in this process")
    return _host_now


@DBOS.workflow(name=TASK_WORKFLOW)
async def task_workflow(encoded: str) -> str:
    async with _host().tracked():
        return await run_task(_host(), encoded)
