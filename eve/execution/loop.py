"""``run_agent``: one turn of the agent loop — model stream → tool calls → results → next step.

The loop knows the ``ModelClient`` protocol and resolved tools, nothing of providers or of
durability. It takes *what* runs (an ``AgentSetup``) and *where* (a ``TurnEnvironment``);
cancellation is cooperative and checked wherever control returns here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, assert_never

import msgspec

from eve.attachments import attachments_of
from eve.connections import authorization
from eve.context.active import EveContext, use_context
from eve.costs import Spend, price
from eve.errors import ModelProtocolError
from eve.events import (
    ActionResultData,
    ActionsRequestedData,
    EventData,
    MessageCompletedData,
    MessageReceivedData,
    SkillLoadedData,
    StepCompletedData,
    StepStartedData,
    TaskKind,
    TaskSettledData,
    TaskStartedData,
    TurnCancelledData,
    TurnCompletedData,
    TurnFailedData,
    TurnStartedData,
    TurnStop,
)
from eve.execution.call_asks import call_asks
from eve.execution.catalog_calls import as_entries, connection_of, loaded_skill, requested
from eve.execution.checkpoints import (
    Aborted,
    AsksPerson,
    NeedsListing,
    Produce,
    RanAll,
    StartsTask,
    StepPart,
    part_key,
)
from eve.execution.compaction import (
    Compactor,
    Policy,
    SummaryFailed,
    compaction_client,
    compaction_key,
    needs_compaction,
    plan,
)
from eve.execution.connections import TurnConnections
from eve.execution.deps import deps_scope
from eve.execution.environment import TurnEnvironment
from eve.execution.events import EventEmitter
from eve.execution.limits import LimitName, crossed, enforce
from eve.execution.model_chain import stream_chain
from eve.execution.output import Accepted, OutputCheck, Pending, Rejected
from eve.execution.response import ModelResponse
from eve.execution.result import RunResult
from eve.execution.setup import AgentSetup
from eve.execution.tasks import TaskCall
from eve.execution.tool_calls import (
    ABORTED_BEFORE_EXECUTION,
    Admitted,
    CallOutcome,
    NeedsPerson,
    ToolRunner,
    outcome,
)
from eve.execution.tool_output import agent_output_limit, bounded
from eve.execution.transcript import TranscriptWriter
from eve.execution.trim import trim_history
from eve.execution.turn_config import (
    compaction_policy,
    nothing_answered,
    output_check,
    step_request,
    truncation,
)
from eve.execution.turn_start import prepare_turn
from eve.messages import (
    Message,
    StopReason,
    ToolCall,
    UserMessage,
    model_view,
    summary_message,
    user_message,
)
from eve.models.base import (
    ModelClient,
    ModelRequest,
)
from eve.redact import redact
from eve.runtime.resolved import (
    ResolvedSubagent,
    is_task,
)

#: a person's answer about a call: the approval rule that asked, and whether they approved
Answer = tuple[str, bool]
D = TypeVar("D", bound=EventData)


class _Aborted(Exception):
    pass


@dataclass(kw_only=True)
class _Turn:
    setup: AgentSetup
    env: TurnEnvironment
    emitter: EventEmitter
    context: EveContext
    runner: ToolRunner
    history: list[Message]
    transcript: TranscriptWriter | None
    #: the turn's tokens and cost so far, and the current step's
    spend: Spend = field(default_factory=Spend)
    step_spend: Spend = field(default_factory=Spend)
    #: whether the recorder produced the current part now (else it replayed a record)
    live: bool = False
    #: the typed answer asked for (``output_schema``), and the accepted one
    output: OutputCheck | None = None
    answer: Accepted | None = None
    #: where this turn's messages begin in ``history``
    start: int = 0
    #: when to compact (None: the node does not)
    compaction: Policy | None = None
    #: a compaction failed this turn: requests are trimmed to the threshold instead
    trim_to: int | None = None
    #: the session limit a person ended the session on
    ended_by: LimitName | None = None
    #: which MCP connections the turn has listed (set when it starts)
    connections: TurnConnections | None = None
    #: why the last step's model response ended (``max_tokens``: it was cut off)
    finish: StopReason | None = None
    answered_by: str | None = None

    def result(self, stop: TurnStop, *, output: Any = None) -> RunResult:
        spend = self.spend
        session = self.env.spent_before + spend
        return RunResult(
            stop_reason=stop,
            messages=self.history,
            usage=spend.usage,
            cost=spend.cost,
            session=session,
            output=output,
            ended_by=self.ended_by,
            finish_reason=self.finish,
        )

    def record(self, message: Message) -> None:
        if self.transcript is not None:
            self.transcript.append(message)
        self.history.append(message)

    def calls_of(self, response: ModelResponse) -> list[ToolCall]:
        """The response's calls as they run: an ``eve__tool`` call as the entry it names.

        The history keeps the calls as the model made them (see ``catalog_calls``)."""
        return as_entries(response.tool_calls, self.runner.tools)

    def check(self) -> None:
        if self.env.signal.cancelled:
            raise _Aborted

    def request(self, client: ModelClient) -> ModelRequest:
        """The step's request as ``client`` is sent it (its output limit is its own)."""
        native = self.output is not None and self.output.native
        return step_request(
            self.setup,
            client,
            tools=list(self.runner.tools.values()),
            messages=trim_history(model_view(self.history), self.budget()),
            output_schema=self.output.schema if self.output is not None and native else None,
            signal=self.env.signal,
        )

    def budget(self) -> int | None:
        budgets = [b for b in (self.setup.context_budget_tokens, self.trim_to) if b is not None]
        return min(budgets) if budgets else None

    async def compact(self, step: int) -> None:
        """Before step ``step``'s request: fold older history into a summary when the
        request would reach the threshold (a recorded part: see ``execution.compaction``)."""
        policy = self.compaction
        system = self.setup.agent.instructions
        if policy is None or self.trim_to is not None:
            return
        if not needs_compaction(policy, system, self.history):
            return
        view = model_view(self.history)
        folded = plan(view, policy.keep_tokens)
        if folded is None:
            return
        compactor = Compactor(
            policy=policy,
            client=lambda: compaction_client(
                policy.config, self.setup.client, app_root=self.setup.app_root
            ),
            system=system,
            emit=lambda data: self.emit(data, step),
        )
        record = await self.env.recorder.compaction(
            compaction_key(step), lambda: compactor.run(view, folded)
        )
        if isinstance(record, SummaryFailed):
            self.trim_to = policy.threshold_tokens
            return
        # the summary's tokens count toward the step (and so the turn and the session)
        prices = self.setup.agent.config.model_prices
        spent = Spend(usage=record.usage, cost=price(record.model, record.usage, prices))
        self.step_spend = self.step_spend + spent
        self.record(summary_message(record.summary, folded=record.folded, kept=record.kept))

    async def connect(self) -> None:
        """Add the tools of the node's MCP connections that every request offers; the
        catalog's wait until the turn needs them (``execution.connections``)."""
        self.connections = TurnConnections(
            self.setup.agent, self.env.recorder, self.emit, workspace=self.setup.workspace
        )
        self.runner.tools = await self.connections.start(self.runner.tools)

    def needs_listing(self, call: ToolCall) -> bool:
        return self.connections is not None and self.connections.needs_listing(call)

    async def stream(self, step: int) -> ModelResponse:
        self.check()

        async def emit(data: EventData) -> None:
            await self.emit(data, step)

        return await stream_chain(
            self.setup.models, self.request, step=step, emit=emit, check=self.check
        )

    def settle(self, complete: bool) -> bool:
        """Whether the turn is over once a step ran (``complete``: it would end the turn);
        with ``output_schema``, only once a valid answer came. An invalid one is sent back
        to fix, as the final-answer tool's failed result or as a user-side message."""
        if self.output is None:
            return complete
        verdict = self.output.judge(self.history[self.start :], complete=complete)
        match verdict:
            case Accepted():
                self.answer = verdict
                return True
            case Pending():
                return False
            case Rejected():
                if self.finish == "max_tokens":
                    model_id = self.answered_by or self.setup.client.model_id
                    raise truncation(self.setup, model_id, self.history, verdict.problem)
                self.output.count(verdict, model_id=self.setup.client.model_id)
                if verdict.tell is not None:
                    self.record(user_message(verdict.tell))
                return False
            case _:
                assert_never(verdict)

    async def emit(self, data: D, step: int | None = None) -> None:
        """Publish ``data`` as this turn's event (inside step ``step``, when given)."""
        await self.emitter.emit(
            msgspec.structs.replace(data, turn_id=self.env.turn_id, step_index=step)
        )

    async def run_calls(
        self,
        step: int,
        response: ModelResponse,
        first: int,
        answer: Answer | None = None,
        settled: CallOutcome | None = None,
        *,
        listed: bool = False,
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
        # only the first part carries the response: a replay records what a part holds,
        # and the part after an answer about call 0 must not record the response again
        resumed = answer is not None or settled is not None or listed
        own = response if first == 0 and not resumed else None
        for position in range(first, len(calls)):
            call = calls[position]
            # a settled task has run: its result is recorded even when the turn was
            # cancelled meanwhile; only calls not yet run are closed as aborted
            if self.env.signal.cancelled and not (position == first and settled is not None):
                return Aborted(response=own, first_call=first, outcomes=outcomes)
            if self.needs_listing(response.tool_calls[position]):
                return NeedsListing(
                    response=own, first_call=first, outcomes=outcomes, call=position
                )
            admitted: Admitted | CallOutcome | NeedsPerson
            if position == first and settled is not None:
                admitted = settled
            elif position == first and answer is not None:
                admitted = self.runner.answered(call, *answer)
            else:
                admitted = await self.runner.admit(call)
            if isinstance(admitted, NeedsPerson):
                rule = admitted.rule
                return AsksPerson(
                    response=own, first_call=first, outcomes=outcomes, call=position, rule=rule
                )
            if isinstance(admitted, Admitted) and is_task(admitted.tool):
                return StartsTask(response=own, first_call=first, outcomes=outcomes, call=position)
            if isinstance(admitted, Admitted):
                admitted = await self.runner.run_admitted(admitted, step)
                self.count_sampled(admitted)
            # capped before it is recorded: history, checkpoint and event never hold it whole
            admitted = bounded(admitted, self.runner.output_limit_of(call))
            self.record(admitted.result)
            skill = loaded_skill(call, admitted)
            if skill is not None:
                await self.emit(SkillLoadedData(call_id=call.id, name=skill), step)
            await self.result_event(call, admitted, step)
            # a replayed part emits no events: its checkpoint needs only what the model read
            outcomes.append(msgspec.structs.replace(admitted, stored_output=None, traceback=None))
        return RanAll(response=own, first_call=first, outcomes=outcomes)

    async def first_part(self, step: int) -> StepPart:
        """The model's response and every call it asks for, up to one needing a person."""
        self.live = True
        response = await self.stream(step)
        text, calls, finish = response.text, response.tool_calls, response.finish_reason
        if not text and not calls:
            return RanAll(response=response)
        # on disk before any tool runs, so a transcript never holds a result without its call
        self.record(response.message())
        if text:
            await self.emit(MessageCompletedData(message=text, finish_reason=finish), step)
        connections = self.connections
        if connections is not None and any(map(connections.names_pending_tool, calls)):
            # announced once listed: until then a server's tool is not known by its name
            return NeedsListing(response=response, call=0, announce=True)
        await self.announce(response, step)
        return await self.run_calls(step, response, 0)

    async def announce(self, response: ModelResponse, step: int) -> None:
        """``actions.requested``: the response's calls, each as it runs."""
        calls = response.tool_calls
        if calls:
            runs_as = self.calls_of(response)
            tools = self.runner.tools
            actions = [requested(c, r, tools) for c, r in zip(calls, runs_as, strict=True)]
            await self.emit(ActionsRequestedData(actions=actions), step)

    async def after_listing(
        self, step: int, response: ModelResponse, part: NeedsListing
    ) -> StepPart:
        """The part after ``part`` stopped for the catalog's MCP servers: list them (a
        recorded value, between parts), then go on from the call that needed them."""
        assert self.connections is not None, "only a started turn stops for a listing"
        self.runner.tools = await self.connections.list_catalog(self.runner.tools)
        position = part.call

        async def listed() -> StepPart:
            if part.announce:
                await self.announce(response, step)
            return await self.run_calls(step, response, position, listed=True)

        return await self.part(part_key(step, position, "listed"), listed)

    async def part(self, key: str, produce: Produce) -> StepPart:
        """A part from the recorder; a replayed one (not produced now) is recorded here."""
        self.live = False
        part = await self.env.recorder.part(key, produce)
        if not self.live:
            if part.response is not None and (part.response.text or part.response.tool_calls):
                self.record(part.response.message())
            for result in part.outcomes:
                self.record(result.result)
                self.count_sampled(result)
        return part

    def count_sampled(self, result: CallOutcome) -> None:
        """An MCP server's sampling during a call used the agent's model: the step's spend."""
        if result.sampled is not None:
            self.step_spend = self.step_spend + result.sampled

    async def run_task(self, call: ToolCall, step: int) -> CallOutcome:
        """Run an admitted call as a task, between parts: ``task.started`` … ``task.settled``."""
        tool = self.runner.tools[call.name]
        assert is_task(tool), "only task tools stop a part with StartsTask"
        task = TaskCall(
            call=call,
            tool=tool,
            step_index=step,
            turn_id=self.env.turn_id,
            session_id=self.emitter.session_id,
            node_id=self.setup.agent.node_id,
            context=self.context,
            emitter=self.emitter,
            signal=self.env.signal,
        )
        tasks = self.env.tasks
        task_id = tasks.task_id(task)
        if self.env.signal.cancelled:
            # cancelled between parts: the task is not started, so nothing can park on it
            return outcome(call, ABORTED_BEFORE_EXECUTION, "failed")
        kind: TaskKind = "subagent" if isinstance(tool, ResolvedSubagent) else "workflow-tool"
        started = TaskStartedData(call_id=call.id, name=call.name, kind=kind, task_id=task_id)
        await self.emit(started, step)
        result = await tasks.run(task, task_id)
        if result.spend is not None:
            # a subagent's tokens are the caller's: they count in this step, turn, session
            self.step_spend = self.step_spend + result.spend
        settled = TaskSettledData(
            call_id=call.id,
            name=call.name,
            task_id=task_id,
            status=result.status,
            spend=result.spend,
        )
        await self.emit(settled, step)
        return result

    async def resume(
        self, step: int, response: ModelResponse, part: AsksPerson | StartsTask
    ) -> StepPart:
        """The part after ``part`` stopped at a call that needs a person or runs as a task."""
        calls = self.calls_of(response)
        position = part.call
        if isinstance(part, StartsTask):
            settled = await self.run_task(calls[position], step)

            def after_task() -> Awaitable[StepPart]:
                return self.run_calls(step, response, position, settled=settled)

            return await self.part(part_key(step, position, "settled"), after_task)
        answer = (part.rule, await self.ask(calls[position], part.rule, calls[position:]))

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
        data = ActionResultData(
            call_id=call.id,
            name=call.name,
            status=result.status,
            output=result.result.content if result.stored_output is None else result.stored_output,
            connection=connection_of(call.name, self.runner.tools),
            traceback=result.traceback,
        )
        await self.emit(data, step)

    async def step(self, step: int) -> bool:
        """One model call and its tool calls; True when the turn is complete."""
        await self.emit(StepStartedData(), step)
        self.step_spend = Spend()
        await self.compact(step)
        part = await self.part(part_key(step), lambda: self.first_part(step))
        response = part.response
        if response is None:
            raise ModelProtocolError("a recorded step has no model response")
        # the model that answered, which a fallback chain's may not be the first
        model_id = response.model or self.setup.client.model_id
        prices = self.setup.agent.config.model_prices
        call = Spend(usage=response.usage, cost=price(model_id, response.usage, prices))
        self.step_spend = self.step_spend + call
        text, calls, finish = response.text, self.calls_of(response), response.finish_reason
        self.finish, self.answered_by = finish, model_id
        if not text and not calls:
            raise nothing_answered(
                self.setup, model_id, self.history, finish, typed=self.output is not None
            )
        ends = False
        while True:
            ends = ends or any(result.ends_turn for result in part.outcomes)
            match part:
                case RanAll():
                    break
                case Aborted():
                    self.close(calls[part.next_call :], ABORTED_BEFORE_EXECUTION)
                    raise _Aborted
                case AsksPerson() | StartsTask():
                    part = await self.resume(step, response, part)
                case NeedsListing():
                    part = await self.after_listing(step, response, part)
                case _:
                    assert_never(part)
        self.spend = self.spend + self.step_spend
        done = StepCompletedData(
            finish_reason=finish,
            usage=self.spend.usage,
            cost=self.spend.cost,
            step=self.step_spend,
        )
        await self.emit(done, step)
        return ends or not calls


async def run_agent(
    setup: AgentSetup,
    message: str | UserMessage,
    *,
    history: Sequence[Message] = (),
    env: TurnEnvironment | None = None,
) -> RunResult:
    """Run one turn of ``setup``'s agent on ``message`` and return how it stopped, the whole
    history and the tokens used.

    ``message`` is the user's text, or a ``UserMessage`` whose parts may carry images and
    documents (``eve.messages.user_message(text, attachments)``).

    ``history`` is the conversation so far; ``env`` says where the turn runs (ids, cancel
    signal, events, state, durability, tasks, approvals; see ``TurnEnvironment``). At most
    ``setup.max_turns`` model requests are made. Tool failures of every kind become
    ``is_error`` results the model sees; an approval hook that raises closes the pending
    calls and re-raises; cancellation through ``env.signal`` stops with ``aborted``.
    """
    env = env or TurnEnvironment()
    emitter = env.events(setup.hooks)
    context = env.context or EveContext(session_id=env.session_id)
    check = output_check(setup)
    final = check.tool() if check is not None else None
    turn = _Turn(
        setup=setup,
        env=env,
        emitter=emitter,
        context=context,
        runner=ToolRunner(
            tools={t.name: t for t in [*setup.agent.tools, *([final] if final else [])]},
            approve=env.approve,
            emitter=emitter,
            signal=env.signal,
            session_id=env.session_id,
            node_id=setup.agent.node_id,
            workspace=setup.workspace,
            approved_once=env.approved_once,
            turn_id=env.turn_id,
            output_limit=agent_output_limit(setup),
            principal=context.principal,
            asks=call_asks(setup, env),
        ),
        history=list(history),
        transcript=TranscriptWriter(env.transcript) if env.transcript else None,
        output=check,
        start=len(history),
        compaction=compaction_policy(setup),
    )
    # an MCP connection that needs a person to sign in tells them through this turn
    with use_context(context), authorization.lent(notify=emitter.emit):
        async with deps_scope(context):  # the turn's deps close when it ends, however
            return await _run(turn, message)


async def _run(turn: _Turn, message: str | UserMessage) -> RunResult:
    await turn.emit(TurnStartedData())
    try:
        user = user_message(message) if isinstance(message, str) else message
        turn.record(user)
        received = MessageReceivedData(message=user.text, attachments=attachments_of(user.parts))
        await turn.emit(received)
        await turn.connect()
        turn.setup = await prepare_turn(turn.setup, turn.env, turn.context, user.text)
        stop: TurnStop = "max_turns"
        for step in range(turn.setup.max_turns):
            complete = turn.settle(await turn.step(step))
            limits, spend = turn.setup.agent.config.limits, turn.env.spent_before + turn.spend
            raised, ask = turn.env.raised_limits, turn.env.ask_limit
            turn.ended_by = await enforce(limits, raised, spend, ask, step)
            if turn.ended_by is None and crossed(limits, raised, spend, step) is not None:
                turn.check()  # no answer: the turn was cancelled while a person was asked
            if complete or turn.ended_by is not None:
                stop = "complete" if complete else "session_limit"
                break
    except _Aborted:
        await turn.emit(TurnCancelledData(reason=turn.env.signal.reason or "cancelled"))
        return turn.result("aborted")
    except Exception as error:
        await turn.emit(TurnFailedData(error=redact(f"{type(error).__name__}: {error}")))
        raise
    # a CancelledError is not the turn failing: the process is stopping (a durable turn
    # resumes after the restart) or the caller gave up, so no event claims an outcome
    answer = turn.answer
    output = answer.json() if answer is not None else None
    spend, session = turn.spend, turn.env.spent_before + turn.spend
    completed = TurnCompletedData(
        stop_reason=stop,
        usage=spend.usage,
        cost=spend.cost,
        session=session,
        output=output,
        finish_reason=turn.finish,
    )
    await turn.emit(completed)
    return turn.result(stop, output=answer.value if answer is not None else None)
