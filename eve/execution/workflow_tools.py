"""Running a workflow tool's body as a task, with in-process or durable waits."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from eve.authoring.workflow import AskHook, Question, Waits, WorkflowContext
from eve.errors import EveError, NoOneToAsk, TaskCancelled, WaitUnavailable
from eve.events import InputRequestedData, InputResolvedData, Option, QuestionRequest
from eve.execution.tasks import TaskCall, completed, failed
from eve.execution.tool_calls import CallOutcome, publish_partial, raised
from eve.runtime.resolved import ResolvedWorkflowTool

T = TypeVar("T")


async def run_workflow_tool(task: TaskCall, waits: Waits, workspace: Path) -> CallOutcome:
    """The body's return value as the call's result; what it raises as a failed result."""
    call, tool = task.call, task.tool
    assert isinstance(tool, ResolvedWorkflowTool), "a subagent is no workflow tool"
    try:
        data = tool.validator.validate(call.input)
    except EveError as error:
        return failed(call, error)
    ctx = WorkflowContext(
        session_id=task.session_id,
        call_id=call.id,
        tool_name=call.name,
        node_id=task.node_id,
        signal=task.signal,
        workspace=workspace,
        principal=task.context.principal,
        waits=waits,
    )
    try:
        value = await tool.run(data, ctx)
    except Exception as error:
        return raised(call, error)
    return completed(call, value)


async def progress_of(task: TaskCall, value: Any) -> None:
    """A workflow tool's ``ctx.progress``, whoever runs it."""
    await publish_partial(
        task.emitter, turn_id=task.turn_id, step=task.step_index, call=task.call, value=value
    )


def question_request(request_id: str, question: Question, task_id: str) -> QuestionRequest:
    """One request of ``input.requested`` for a workflow tool's question."""
    return QuestionRequest(
        request_id=request_id,
        tool_name=question.tool_name,
        call_id=question.call_id,
        question=question.question,
        task_id=task_id,
        options=[Option(id=option, label=option) for option in question.options],
    )


@dataclass(kw_only=True)
class LocalWaits:
    """Waits in this process, for a loop without a durable session (``eve run``)."""

    task: TaskCall
    task_id: str
    ask_hook: AskHook | None
    asked: int = 0

    async def sleep(self, seconds: float) -> None:
        signal = self.task.signal
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(signal.wait(), timeout=seconds)
        if signal.cancelled:
            raise TaskCancelled("the turn was cancelled while the tool slept")

    async def wait_for_event(self, name: str, timeout: float | None) -> Any:
        raise WaitUnavailable(
            f"waiting for the event {name!r} needs a durable session, where the event can "
            "be sent to the task: run the agent with `eve dev` or `eve serve`"
        )

    async def ask(self, question: Question) -> str:
        self.asked += 1
        request_id = f"{self.task_id}:ask-{self.asked}"
        emit, turn = self.task.emitter.emit, self.task.turn_id
        request = question_request(request_id, question, self.task_id)
        await emit(InputRequestedData(turn_id=turn, requests=[request]))
        answer = None if self.ask_hook is None else await self.ask_hook(question)
        if answer is None and self.task.signal.cancelled:
            # a Ctrl-C while the person was asked: the turn stops, the question is unanswered
            raise TaskCancelled("the turn was cancelled while the tool asked a question")
        if answer is not None and answer in question.options:
            await emit(InputResolvedData(turn_id=turn, request_id=request_id, option_id=answer))
        if answer is None:
            raise NoOneToAsk(
                f"{question.tool_name} asked {question.question!r} and no one here can "
                "answer; run it with `eve dev` or `eve serve`, or interactively"
            )
        if answer not in question.options:
            raise NoOneToAsk(f"the answer {answer!r} is not one of {question.options}")
        return answer

    async def progress(self, value: Any) -> None:
        await progress_of(self.task, value)

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        return await fn()
