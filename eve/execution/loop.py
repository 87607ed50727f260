"""``run_agent``: one turn of the agent loop, as the driver of the turn's state machine.

The turn's state is one frozen value (``turn_state.TurnState``); ``transitions`` says what
the turn does next and what state follows each outcome; this module performs each action
(the model, the tools, people, tasks, the recorder) and emits the turn's events. The loop
knows the ``ModelClient`` protocol and resolved tools, nothing of providers or of
durability. It takes *what* runs (an ``AgentSetup``) and *where* (a ``TurnEnvironment``);
cancellation is cooperative and checked wherever control returns here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar, assert_never

import msgspec

from eve.attachments import attachments_of
from eve.connections import authorization
from eve.context.active import EveContext, use_context
from eve.errors import ModelProtocolError
from eve.events import (
    EventData,
    MessageCompletedData,
    MessageReceivedData,
    StepCompletedData,
    StepStartedData,
    TurnCancelledData,
    TurnCompletedData,
    TurnFailedData,
    TurnStartedData,
)
from eve.execution.call_asks import call_asks
from eve.execution.catalog_calls import as_entries
from eve.execution.checkpoints import (
    OUTCOMES,
    PARTS,
    NeedsListing,
    PartAfter,
    RanAll,
    StepPart,
    call_key,
    part_key,
)
from eve.execution.compaction import (
    COMPACTIONS,
    CompactionRecord,
    Compactor,
    compaction_client,
    compaction_key,
)
from eve.execution.connections import TurnConnections
from eve.execution.environment import TurnEnvironment
from eve.execution.events import EventEmitter
from eve.execution.limits import LimitCrossed, limit_reached
from eve.execution.memory import with_recall
from eve.execution.model_chain import stream_chain
from eve.execution.output import Accepted, OutputCheck, Pending, Rejected
from eve.execution.response import ModelResponse
from eve.execution.result import RunResult
from eve.execution.setup import AgentSetup
from eve.execution.step_calls import StepCalls
from eve.execution.task_calls import run_task
from eve.execution.tasks import TaskCall
from eve.execution.tool_calls import ToolRunner, outcome
from eve.execution.tool_output import agent_output_limit
from eve.execution.transcript import TranscriptWriter
from eve.execution.transitions import apply, next_action, opening
from eve.execution.trim import trim_history
from eve.execution.turn_actions import (
    Action,
    AskLimit,
    AskPerson,
    BatchRan,
    BeginStep,
    CatalogListed,
    Compact,
    CompactionDone,
    Finish,
    LimitAnswered,
    ListCatalog,
    Outcome,
    PartRan,
    PeopleAnswered,
    RunBatch,
    RunCalls,
    SettleStep,
    StartTask,
    StepBegan,
    StepJudged,
    StreamStep,
    TaskRan,
)
from eve.execution.turn_config import (
    compaction_policy,
    nothing_answered,
    output_check,
    step_request,
    truncation,
)
from eve.execution.turn_state import (
    Answered,
    Done,
    Fresh,
    Listed,
    PersonAnswer,
    Resume,
    Settled,
    TurnRules,
    TurnState,
)
from eve.messages import Message, ToolCall, UserMessage, model_view, user_message
from eve.models.base import ModelClient, ModelRequest
from eve.redact import redact
from eve.runtime.resolved import is_task

D = TypeVar("D", bound=EventData)


class _Cancelled(Exception):
    """The turn's signal was found cancelled where control returned to the loop."""


@dataclass(kw_only=True)
class _Driver:
    """Performs a turn's actions: the model, the tools, people, tasks and the recorder."""

    setup: AgentSetup
    env: TurnEnvironment
    emitter: EventEmitter
    context: EveContext
    runner: ToolRunner
    transcript: TranscriptWriter | None
    #: the typed answer asked for (``output_schema``)
    output: OutputCheck | None
    #: which MCP connections the turn has listed (set when it starts)
    connections: TurnConnections | None = None
    #: how much of the history the transcript holds
    written: int = 0

    async def perform(self, state: TurnState, action: Action) -> Outcome:
        match action:
            case BeginStep(step=step):
                await self.emit(StepStartedData(), step)
                return StepBegan(step)
            case Compact(step=step, folded=folded):
                return CompactionDone(await self.compact(state, step, folded))
            case StreamStep(step=step):
                return await self.stream_step(state, step)
            case RunCalls():
                return await self.run_calls(state, action)
            case RunBatch():
                return await self.run_batch(state, action)
            case AskPerson():
                return await self.ask(state, action)
            case StartTask(step=step, response=response, call=call):
                task = self.task_call(self.calls_of(response)[call], step)
                return TaskRan(await run_task(task, self.env.tasks, partial(self.emit, step=step)))
            case ListCatalog():
                return await self.list_catalog()
            case SettleStep(step=step, complete=complete):
                return await self.settle(state, step, complete=complete)
            case AskLimit(crossing=crossing):
                return await self.ask_limit(crossing)
            case Finish():
                raise AssertionError("a finished turn performs nothing")
            case _:
                assert_never(action)

    # --- the parts of a step ----------------------------------------------------------------

    async def stream_step(self, state: TurnState, step: int) -> PartRan:
        """The model's response and every call it asks for, up to one the loop handles."""

        async def first_part() -> StepPart:
            response = await self.stream(state, step)
            text, made, finish = response.text, response.tool_calls, response.finish_reason
            if not text and not made:
                return RanAll(response=response)
            # on disk before any tool runs, so a transcript never holds a result without its call
            self.keep(response.message())
            if text:
                await self.emit(MessageCompletedData(message=text, finish_reason=finish), step)
            connections = self.connections
            if connections is not None and any(map(connections.names_pending_tool, made)):
                # announced once listed: until then a server's tool is not known by its name
                return NeedsListing(response=response, call=0, announce=True)
            calls = self.step_calls(state, step, response)
            await calls.announce()
            return await calls.part(0, Fresh(), response=response)

        part = await self.env.recorder.record(part_key(step), first_part, PARTS)
        response = part.response
        if response is None:
            raise ModelProtocolError("a recorded step has no model response")
        calls = self.calls_of(response)
        if not response.text and not calls:
            model_id = response.model or self.setup.client.model_id
            typed = self.output is not None
            finish = response.finish_reason
            raise nothing_answered(self.setup, model_id, state.history, finish, typed=typed)
        return PartRan(part, response, tuple(calls))

    async def run_calls(self, state: TurnState, action: RunCalls) -> PartRan:
        step, response, first, resume = action.step, action.response, action.first, action.resume
        calls = self.step_calls(state, step, response)

        async def later_part() -> StepPart:
            if isinstance(resume, Listed) and resume.announce:
                await calls.announce()
            return await calls.part(first, resume)

        key = part_key(step, first, _after(resume))
        part = await self.env.recorder.record(key, later_part, PARTS)
        return PartRan(part, response, tuple(calls.calls))

    async def run_batch(self, state: TurnState, action: RunBatch) -> BatchRan:
        """The batch's calls at once, each its own record: a recovered turn runs only the
        ones that did not finish. Results keep the model's order."""
        calls = self.step_calls(state, action.step, action.response)
        record = self.env.recorder.record
        async with asyncio.TaskGroup() as group:
            running = [
                group.create_task(
                    record(call_key(action.step, i), partial(calls.run_one, i), OUTCOMES)
                )
                for i in range(action.first, action.until)
            ]
        outcomes = tuple(task.result() for task in running)
        return BatchRan(outcomes, tuple(calls.calls), cancelled=self.env.signal.cancelled)

    async def ask(self, state: TurnState, action: AskPerson) -> PeopleAnswered:
        """Ask about every call of the round at once; a hook that fails closes the calls
        from the first asked on, then the turn fails with its error."""
        calls = self.calls_of(action.response)
        asks = action.asks
        try:
            approved = await self.runner.ask([(calls[a.call], a.rule) for a in asks])
        except BaseException as error:
            reason = f"not run: approval failed ({type(error).__name__})"
            rest = calls[asks[0].call :]
            self.write(state.with_messages(*(outcome(c, reason, "failed").result for c in rest)))
            raise
        answers = tuple(
            (a.call, PersonAnswer(a.rule, ok)) for a, ok in zip(asks, approved, strict=True)
        )
        return PeopleAnswered(answers, tuple(calls[a.call].name for a in asks))

    async def list_catalog(self) -> CatalogListed:
        """List the catalog's MCP servers (a record), between two parts of a step."""
        assert self.connections is not None, "only a started turn lists the catalog"
        self.runner.tools = await self.connections.list_catalog(self.runner.tools)
        return CatalogListed()

    async def ask_limit(self, crossing: LimitCrossed) -> LimitAnswered:
        ask = self.env.ask_limit
        if ask is None:
            raise limit_reached(crossing)
        decision = await ask(crossing)
        if decision is None:
            self.check()  # no answer: the turn was cancelled while a person was asked
        return LimitAnswered(crossing, decision)

    async def settle(self, state: TurnState, step: int, *, complete: bool) -> StepJudged:
        """``step.completed``; then whether the turn is over: with ``output_schema``, only
        once a valid answer came. An invalid one is sent back to fix, as the final-answer
        tool's failed result or as a user-side message."""
        spend, finish = state.spend + state.step_spend, state.finish
        assert finish is not None, "a settled step has its model response"
        done = StepCompletedData(
            finish_reason=finish, usage=spend.usage, cost=spend.cost, step=state.step_spend
        )
        await self.emit(done, step)
        if self.output is None:
            return StepJudged(complete)
        verdict = self.output.judge(list(state.turn_messages), complete=complete)
        match verdict:
            case Accepted():
                return StepJudged(True, answer=verdict)
            case Pending():
                return StepJudged(False)
            case Rejected():
                model_id = self.setup.client.model_id
                if state.finish == "max_tokens":
                    answered_by = state.answered_by or model_id
                    raise truncation(self.setup, answered_by, state.history, verdict.problem)
                self.output.count(verdict, model_id=model_id)
                tell = None if verdict.tell is None else user_message(verdict.tell)
                return StepJudged(False, tell=tell)
            case _:
                assert_never(verdict)

    async def compact(self, state: TurnState, step: int, folded: int) -> CompactionRecord:
        """Before step ``step``'s request: fold older history into a summary (a record of
        its own: see ``execution.compaction``)."""
        policy = state.rules.compaction
        assert policy is not None, "only a node that compacts compacts"
        compactor = Compactor(
            policy=policy,
            client=lambda: compaction_client(
                policy.config, self.setup.client, app_root=self.setup.app_root
            ),
            system=state.rules.system,
            emit=lambda data: self.emit(data, step),
        )
        view = model_view(state.history)
        return await self.env.recorder.record(
            compaction_key(step), lambda: compactor.run(view, folded), COMPACTIONS
        )

    # --- helpers ------------------------------------------------------------------------------

    def step_calls(self, state: TurnState, step: int, response: ModelResponse) -> StepCalls:
        return StepCalls(
            runner=self.runner,
            emit=partial(self.emit, step=step),
            step=step,
            response=response,
            calls=self.calls_of(response),
            answers=state.answers,
            approved_once=state.approved_once,
            connections=self.connections,
            keep=self.keep,
        )

    def task_call(self, call: ToolCall, step: int) -> TaskCall:
        tool = self.runner.tools[call.name]
        assert is_task(tool), "only task tools stop a part with StartsTask"
        return TaskCall(
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

    def calls_of(self, response: ModelResponse) -> list[ToolCall]:
        """The response's calls as they run: an ``eve__tool`` call as the entry it names.

        The history keeps the calls as the model made them (see ``catalog_calls``)."""
        return as_entries(response.tool_calls, self.runner.tools)

    def check(self) -> None:
        if self.env.signal.cancelled:
            raise _Cancelled

    async def stream(self, state: TurnState, step: int) -> ModelResponse:
        self.check()

        def request(client: ModelClient) -> ModelRequest:
            """The step's request as ``client`` is sent it (its output limit is its own)."""
            native = self.output is not None and self.output.native
            return step_request(
                self.setup,
                client,
                tools=list(self.runner.tools.values()),
                messages=trim_history(model_view(state.history), _budget(self.setup, state)),
                output_schema=self.output.schema if self.output is not None and native else None,
                signal=self.env.signal,
            )

        return await stream_chain(
            self.setup.models,
            request,
            step=step,
            emit=partial(self.emit, step=step),
            check=self.check,
        )

    async def emit(self, data: D, step: int | None = None) -> None:
        """Publish ``data`` as this turn's event (inside step ``step``, when given)."""
        await self.emitter.emit(
            msgspec.structs.replace(data, turn_id=self.env.turn_id, step_index=step)
        )

    def keep(self, message: Message) -> None:
        """Append ``message`` to the transcript now, ahead of the state that records it."""
        if self.transcript is not None:
            self.transcript.append(message)
        self.written += 1

    def write(self, state: TurnState) -> None:
        """Append what the transcript does not hold yet of ``state``'s history."""
        if self.transcript is not None:
            for message in state.history[self.written :]:
                self.transcript.append(message)
        self.written = len(state.history)

    async def connect(self) -> None:
        """Add the tools of the node's MCP connections that every request offers; the
        catalog's wait until the turn needs them (``execution.connections``)."""
        self.connections = TurnConnections(
            self.setup.agent, self.env.recorder, self.emit, workspace=self.setup.workspace
        )
        self.runner.tools = await self.connections.start(self.runner.tools)

    def rules(self) -> TurnRules:
        setup = self.setup
        return TurnRules(
            max_turns=setup.max_turns,
            limits=setup.agent.config.limits,
            compaction=compaction_policy(setup),
            system=setup.agent.instructions,
            spent_before=self.env.spent_before,
            model_prices=setup.agent.config.model_prices,
            model_id=setup.client.model_id,
        )


def _after(resume: Resume) -> PartAfter:
    match resume:
        case Answered():
            return "answered"
        case Settled():
            return "settled"
        case Listed():
            return "listed"
        case Fresh():
            return "batch"
        case _:
            assert_never(resume)


def _budget(setup: AgentSetup, state: TurnState) -> int | None:
    budgets = [b for b in (setup.context_budget_tokens, state.trim_to) if b is not None]
    return min(budgets) if budgets else None


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
    driver = _Driver(
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
            turn_id=env.turn_id,
            output_limit=agent_output_limit(setup),
            principal=context.principal,
            asks=call_asks(setup, env),
            parallel=setup.agent.config.parallel_tools,
        ),
        transcript=TranscriptWriter(env.transcript) if env.transcript else None,
        output=check,
        written=len(history),
    )
    state = TurnState(
        rules=driver.rules(),
        at=Done("aborted"),  # set once the turn has started (``opening``)
        history=tuple(history),
        start=len(history),
        approved_once=frozenset(env.approved_once),
        raised_limits=dict(env.raised_limits),
    )
    # an MCP connection that needs a person to sign in tells them through this turn
    with use_context(context), authorization.lent(notify=emitter.emit):
        return await _run(driver, state, message)


async def _run(driver: _Driver, state: TurnState, message: str | UserMessage) -> RunResult:
    await driver.emit(TurnStartedData())
    try:
        user = user_message(message) if isinstance(message, str) else message
        state = state.with_messages(user)
        driver.write(state)
        received = MessageReceivedData(message=user.text, attachments=attachments_of(user.parts))
        await driver.emit(received)
        await driver.connect()
        driver.setup = await with_recall(
            driver.setup, driver.env, driver.context.principal, user.text
        )
        state = msgspec.structs.replace(state, rules=driver.rules())
        state = msgspec.structs.replace(state, at=opening(state))
        while not isinstance(action := next_action(state), Finish):
            state = apply(state, await driver.perform(state, action))
            driver.write(state)
        stop = action.stop
    except _Cancelled:
        stop = "aborted"
    except Exception as error:
        await driver.emit(TurnFailedData(error=redact(f"{type(error).__name__}: {error}")))
        raise
    # a CancelledError is not the turn failing: the process is stopping (a durable turn
    # resumes after the restart) or the caller gave up, so no event claims an outcome
    state = msgspec.structs.replace(state, at=Done(stop))
    if stop == "aborted":
        await driver.emit(TurnCancelledData(reason=driver.env.signal.reason or "cancelled"))
        return _result(state)
    answer = state.answer
    spend, session = state.spend, state.session_spend
    completed = TurnCompletedData(
        stop_reason=stop,
        usage=spend.usage,
        cost=spend.cost,
        session=session,
        output=answer.json() if answer is not None else None,
        finish_reason=state.finish,
    )
    await driver.emit(completed)
    return _result(state)


def _result(state: TurnState) -> RunResult:
    at = state.at
    assert isinstance(at, Done), "a turn's result is of a stopped turn"
    answer = state.answer
    return RunResult(
        stop_reason=at.stop,
        messages=list(state.history),
        usage=state.spend.usage,
        cost=state.spend.cost,
        session=state.session_spend,
        output=answer.value if answer is not None else None,
        ended_by=state.ended_by,
        finish_reason=state.finish,
        state=state,
    )
