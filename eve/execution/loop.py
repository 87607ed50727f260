"""``run_agent``: one turn of the agent loop — model stream → tool calls → results → next step.

The loop knows the ``ModelClient`` protocol and resolved tools, nothing of providers or of
durability. Cancellation is cooperative and checked wherever control returns here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from eve.cancellation import CancelSignal
from eve.context.active import EveContext, use_context
from eve.errors import EmptyModelResponse, ModelProtocolError
from eve.execution.catalog_calls import as_entries, loaded_skill, requested
from eve.execution.checkpoints import (
    Inline,
    ModelResponse,
    Produce,
    StepPart,
    StepRecorder,
    part_key,
)
from eve.execution.events import EventEmitter, EventSink, HookDispatcher
from eve.execution.tasks import TaskCall, TaskRunner
from eve.execution.tool_calls import (
    ABORTED_BEFORE_EXECUTION,
    Admitted,
    ApprovalHook,
    CallOutcome,
    NeedsPerson,
    ToolRunner,
    outcome,
)
from eve.execution.transcript import TranscriptWriter
from eve.execution.trim import trim_history
from eve.messages import AssistantMessage, Message, ToolCall, UserMessage
from eve.models.base import ModelClient, ModelRequest, ProviderToolDeclaration, ToolDeclaration
from eve.models.events import (
    Done,
    ReasoningDelta,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from eve.redact import redact
from eve.runtime.resolved import ResolvedTool

StopKind = Literal["complete", "max_turns", "aborted"]
#: a person's answer about a call: the approval rule that asked, and whether they approved
Answer = tuple[str, bool]


@dataclass(frozen=True, kw_only=True)
class RunResult:
    stop_reason: StopKind
    #: the whole history: prior messages, the new user message and everything recorded after
    messages: list[Message]
    usage: TokenUsage

    @property
    def final_text(self) -> str:
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage) and message.text:
                return message.text
        return ""


class _Aborted(Exception):
    pass


@dataclass(kw_only=True)
class _Turn:
    client: ModelClient
    system: str
    tools: Sequence[ResolvedTool]
    history: list[Message]
    signal: CancelSignal
    emitter: EventEmitter
    runner: ToolRunner
    transcript: TranscriptWriter | None
    turn_id: str
    context_budget_tokens: int | None
    recorder: StepRecorder
    tasks: TaskRunner
    context: EveContext
    node_id: str
    reasoning: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    #: whether the recorder produced the current part now (else it replayed a record)
    live: bool = False

    def record(self, message: Message) -> None:
        if self.transcript is not None:
            self.transcript.append(message)
        self.history.append(message)

    def calls_of(self, response: ModelResponse) -> list[ToolCall]:
        """The response's calls as they run: an ``eve__tool`` call as the entry it names.

        The history keeps the calls as the model made them (see ``catalog_calls``)."""
        return as_entries(response.tool_calls, self.runner.tools)

    def check(self) -> None:
        if self.signal.cancelled:
            raise _Aborted

    def request(self) -> ModelRequest:
        visible = [t for t in self.tools if not t.entry.deferred]
        return ModelRequest(
            system=self.system,
            messages=trim_history(self.history, self.context_budget_tokens),
            tools=[
                ToolDeclaration(
                    name=t.name, description=t.description, input_schema=t.entry.input_schema
                )
                for t in visible
                if t.entry.input_schema is not None and t.handling != "provider-tool"
            ],
            reasoning=self.reasoning,
            node_id=self.node_id,
            provider_tools=[
                ProviderToolDeclaration(
                    name=t.name,
                    provider=t.entry.provider.provider,
                    type=t.entry.provider.type,
                    config=t.entry.provider.config,
                )
                for t in visible
                if t.entry.provider is not None
            ],
            signal=self.signal,
        )

    async def stream(self, step: int) -> ModelResponse:
        text: list[str] = []
        calls: list[ToolCall] = []
        done: Done | None = None
        self.check()
        async for event in self.client.stream(self.request()):
            self.check()
            match event:
                case TextDelta(text=delta):
                    text.append(delta)
                    await self.emit("message.appended", step, message_delta=delta)
                case ReasoningDelta(text=delta):
                    await self.emit("reasoning.appended", step, reasoning_delta=delta)
                case ToolCallEnd(id=call_id, name=name, input=data):
                    calls.append(ToolCall(id=call_id, name=name, input=data))
                case Done():
                    done = event
                case ToolCallStart() | ToolCallDelta():
                    pass
        self.check()
        if done is None:
            raise ModelProtocolError(
                f"{self.client.model_id}: the stream ended without a done event"
            )
        return ModelResponse(
            text="".join(text), tool_calls=calls, finish_reason=done.stop_reason, usage=done.usage
        )

    async def emit(self, type: str, step: int | None = None, **data: object) -> None:
        extra = {} if step is None else {"step_index": step}
        await self.emitter.emit(type, turn_id=self.turn_id, **extra, **data)  # type: ignore[arg-type]

    async def run_calls(
        self,
        step: int,
        response: ModelResponse,
        first: int,
        answer: Answer | None = None,
        settled: CallOutcome | None = None,
    ) -> StepPart:
        """Run the response's calls from ``first`` on, inside one part of the step.

        ``answer`` is a person's ``(rule, approved)`` for the call at ``first``; ``settled``
        is the result of the task the call at ``first`` ran as. The part stops before a call
        that needs a person or runs as a task (the loop handles both between parts) and
        when the turn is cancelled. Each result is recorded as it comes, so it is on disk
        before the next call runs.
        """
        self.live = True
        calls = self.calls_of(response)
        outcomes: list[CallOutcome] = []

        def part(**stopped: Any) -> StepPart:
            # only the first part carries the response: a replay records what a part holds,
            # and the part after an answer about call 0 must not record the response again
            own = response if first == 0 and answer is None and settled is None else None
            return StepPart(response=own, first_call=first, outcomes=outcomes, **stopped)

        for position in range(first, len(calls)):
            call = calls[position]
            # a settled task has run: its result is recorded even when the turn was
            # cancelled meanwhile; only calls not yet run are closed as aborted
            if self.signal.cancelled and not (position == first and settled is not None):
                return part(aborted=True)
            admitted: Admitted | CallOutcome | NeedsPerson
            if position == first and settled is not None:
                admitted = settled
            elif position == first and answer is not None:
                admitted = self.runner.answered(call, *answer)
            else:
                admitted = await self.runner.admit(call)
            if isinstance(admitted, NeedsPerson):
                return part(ask=position, ask_rule=admitted.rule)
            if isinstance(admitted, Admitted) and admitted.tool.is_task:
                return part(task=position)
            if isinstance(admitted, Admitted):
                admitted = await self.runner.run_admitted(admitted, step)
            outcomes.append(admitted)
            self.record(admitted.result)
            skill = loaded_skill(call, admitted)
            if skill is not None:
                await self.emit("skill.loaded", step, call_id=call.id, name=skill)
            await self.result_event(call, admitted, step)
        return part()

    async def first_part(self, step: int) -> StepPart:
        """The model's response and every call it asks for, up to one needing a person."""
        self.live = True
        response = await self.stream(step)
        text, calls, finish = response.text, response.tool_calls, response.finish_reason
        if not text and not calls:
            return StepPart(response=response)
        # on disk before any tool runs, so a transcript never holds a result without its call
        self.record(AssistantMessage(text=text, tool_calls=calls))
        if text:
            await self.emit("message.completed", step, message=text, finish_reason=finish)
        if calls:
            runs_as = self.calls_of(response)
            await self.emit(
                "actions.requested",
                step,
                actions=[requested(c, r) for c, r in zip(calls, runs_as, strict=True)],
            )
        return await self.run_calls(step, response, 0)

    async def part(self, key: str, produce: Produce) -> StepPart:
        """A part from the recorder; a replayed one (not produced now) is recorded here."""
        self.live = False
        part = await self.recorder.part(key, produce)
        if not self.live:
            if part.response is not None and (part.response.text or part.response.tool_calls):
                response = part.response
                self.record(AssistantMessage(text=response.text, tool_calls=response.tool_calls))
            for result in part.outcomes:
                self.record(result.result)
        return part

    def settle(self, part: StepPart, calls: list[ToolCall]) -> bool:
        """Close what a cancelled part left; True when a successful ``ends_turn`` tool ran."""
        if part.aborted:
            self.close(calls[part.next_call :], ABORTED_BEFORE_EXECUTION)
            raise _Aborted
        return any(result.ends_turn for result in part.outcomes)

    async def run_task(self, call: ToolCall, step: int) -> CallOutcome:
        """Run an admitted call as a task, between parts: ``task.started`` … ``task.settled``."""
        task = TaskCall(
            call=call,
            tool=self.runner.tools[call.name],
            step_index=step,
            turn_id=self.turn_id,
            session_id=self.emitter.session_id,
            node_id=self.node_id,
            context=self.context,
            emitter=self.emitter,
            signal=self.signal,
        )
        task_id = self.tasks.task_id(task)
        kind = task.tool.handling
        if self.signal.cancelled:
            # cancelled between parts: the task is not started, so nothing can park on it
            return outcome(call, ABORTED_BEFORE_EXECUTION, "failed")
        await self.emit(
            "task.started", step, call_id=call.id, name=call.name, kind=kind, task_id=task_id
        )
        result = await self.tasks.run(task, task_id)
        await self.emit(
            "task.settled",
            step,
            call_id=call.id,
            name=call.name,
            task_id=task_id,
            status=result.status,
        )
        return result

    async def resume(self, step: int, response: ModelResponse, part: StepPart) -> StepPart:
        """The part after ``part`` stopped at a call that needs a person or runs as a task."""
        calls = self.calls_of(response)
        if part.task is not None:
            position = part.task
            settled = await self.run_task(calls[position], step)

            def after_task() -> Awaitable[StepPart]:
                return self.run_calls(step, response, position, settled=settled)

            return await self.part(part_key(step, position, "settled"), after_task)
        assert part.ask is not None and part.ask_rule is not None
        position, rule = part.ask, part.ask_rule
        answer = (rule, await self.ask(calls[position], rule, calls[position:]))

        def after_answer() -> Awaitable[StepPart]:
            return self.run_calls(step, response, position, answer)

        return await self.part(part_key(step, position), after_answer)

    async def ask(self, call: ToolCall, rule: str, rest: list[ToolCall]) -> bool:
        try:
            return await self.runner.ask(call, rule)
        except BaseException as error:
            self.close(rest, f"not run: approval failed ({type(error).__name__})")
            raise

    def close(self, calls: list[ToolCall], reason: str) -> None:
        for call in calls:
            self.record(outcome(call, reason, "failed").result)

    async def result_event(self, call: ToolCall, result: CallOutcome, step: int) -> None:
        await self.emit(
            "action.result",
            step,
            call_id=call.id,
            name=call.name,
            status=result.status,
            output=result.result.content,
        )

    async def step(self, step: int) -> bool:
        """One model call and its tool calls; True when the turn is complete."""
        await self.emit("step.started", step)
        part = await self.part(part_key(step), lambda: self.first_part(step))
        response = part.response
        if response is None:
            raise ModelProtocolError("a recorded step has no model response")
        self.usage = self.usage + response.usage
        text, calls, finish = response.text, self.calls_of(response), response.finish_reason
        if not text and not calls:
            raise EmptyModelResponse(
                f"{self.client.model_id} answered with neither text nor tool calls "
                f"(finish reason {finish}); nothing was recorded"
            )
        ends = self.settle(part, calls)
        while part.ask is not None or part.task is not None:
            part = await self.resume(step, response, part)
            ends = self.settle(part, calls) or ends
        await self.emit("step.completed", step, finish_reason=finish, usage=self.usage_dict())
        return ends or not calls

    def usage_dict(self) -> dict[str, int]:
        return {"input_tokens": self.usage.input_tokens, "output_tokens": self.usage.output_tokens}


async def run_agent(
    *,
    client: ModelClient,
    system: str,
    tools: Sequence[ResolvedTool],
    user_message: str,
    messages: Sequence[Message] = (),
    max_turns: int = 10,
    approve: ApprovalHook | None = None,
    signal: CancelSignal | None = None,
    transcript: Path | None = None,
    on_event: EventSink | None = None,
    session_id: str = "local",
    turn_id: str = "turn_0",
    node_id: str = "__root__",
    workspace: Path | None = None,
    context_budget_tokens: int | None = None,
    approved_once: set[str] | None = None,
    emitter: EventEmitter | None = None,
    context: EveContext | None = None,
    recorder: StepRecorder | None = None,
    hooks: HookDispatcher | None = None,
    tasks: TaskRunner | None = None,
    reasoning: str | None = None,
) -> RunResult:
    """Run one turn and return how it stopped, the whole history and the tokens used.

    ``max_turns`` caps model requests in this turn. Tool failures of every kind become
    ``is_error`` results the model sees; an approval hook that raises closes the pending calls
    and re-raises; cancellation through ``signal`` stops with ``aborted``. Tools run inside
    ``context`` (a fresh one for ``session_id`` if not given), where ``define_state`` lives.
    ``recorder`` is the durability seam (see ``execution.checkpoints``); inline by default.
    ``hooks`` receive the events of an emitter made here (a given ``emitter`` has its own).
    ``tasks`` runs subagent and workflow-tool calls (``execution.tasks``); in this process
    by default, where a subagent call fails for want of the agent's setup.
    """
    if tasks is None:
        # imported here: the inline runner runs subagents, which run this loop
        from eve.execution.inline_tasks import InlineTasks

        tasks = InlineTasks(approve=approve, workspace=workspace or Path.cwd())
    signal = signal or CancelSignal()
    context = context or EveContext(session_id=session_id)
    emitter = emitter or EventEmitter(on_event, session_id=session_id, hooks=hooks)
    turn = _Turn(
        client=client,
        system=system,
        tools=tools,
        history=list(messages),
        signal=signal,
        emitter=emitter,
        runner=ToolRunner(
            tools={t.name: t for t in tools},
            approve=approve,
            emitter=emitter,
            signal=signal,
            session_id=session_id,
            node_id=node_id,
            workspace=workspace or Path.cwd(),
            approved_once=approved_once if approved_once is not None else set(),
            turn_id=turn_id,
        ),
        transcript=TranscriptWriter(transcript) if transcript else None,
        turn_id=turn_id,
        context_budget_tokens=context_budget_tokens,
        recorder=recorder or Inline(),
        tasks=tasks,
        context=context,
        node_id=node_id,
        reasoning=reasoning,
    )
    with use_context(context):
        return await _run(turn, user_message, max_turns)


async def _run(turn: _Turn, user_message: str, max_turns: int) -> RunResult:
    await turn.emit("turn.started")
    try:
        turn.record(UserMessage(text=user_message))
        await turn.emit("message.received", message=user_message)
        stop: StopKind = "max_turns"
        for step in range(max_turns):
            if await turn.step(step):
                stop = "complete"
                break
    except _Aborted:
        await turn.emit("turn.cancelled", reason=turn.signal.reason or "cancelled")
        return RunResult(stop_reason="aborted", messages=turn.history, usage=turn.usage)
    except BaseException as error:
        await turn.emit("turn.failed", error=redact(f"{type(error).__name__}: {error}"))
        raise
    await turn.emit("turn.completed", stop_reason=stop, usage=turn.usage_dict())
    return RunResult(stop_reason=stop, messages=turn.history, usage=turn.usage)
