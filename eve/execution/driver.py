"""``TurnDriver``: performs each action of the turn's state machine (``turn_actions``) and
hands back its outcome; ``transitions`` decides the rest."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import assert_never

from eve.errors import ModelProtocolError
from eve.events import MessageCompletedData, StepCompletedData, StepStartedData
from eve.execution import turn_actions as act  # actions and outcomes: act.BeginStep, act.StepBegan
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
from eve.execution.limits import LimitCrossed, limit_reached
from eve.execution.output import Accepted, Pending, Rejected
from eve.execution.recording import records_durable
from eve.execution.task_calls import run_task
from eve.execution.tool_calls import outcome
from eve.execution.turn_config import nothing_answered, truncation
from eve.execution.turn_io import TurnIO
from eve.execution.turn_state import (
    Answered,
    Fresh,
    Listed,
    PersonAnswer,
    Resume,
    Settled,
    TurnState,
)
from eve.messages import model_view, user_message


class TurnDriver(TurnIO):
    """Performs a turn's actions: the model, the tools, people, tasks and the recorder."""

    async def perform(self, state: TurnState, action: act.Action) -> act.Outcome:
        # the actions of every step first: a class pattern that misses costs a check
        match action:
            case act.BeginStep(step=step):
                await self.emit(StepStartedData(), step)
                return act.StepBegan(step)
            case act.StreamStep(step=step):
                return await self.stream_step(state, step)
            case act.SettleStep(step=step, complete=complete):
                return await self.settle(state, step, complete=complete)
            case act.Compact(step=step, folded=folded):
                return act.CompactionDone(await self.compact(state, step, folded))
            case act.RunCalls():
                return await self.run_calls(state, action)
            case act.RunBatch():
                return await self.run_batch(state, action)
            case act.AskPerson():
                await records_durable(self.env.recorder)
                return await self.ask(state, action)
            case act.StartTask(step=step, at=at):
                await records_durable(self.env.recorder)
                task = self.task_call(self.calls_of(at.response)[at.call], step)
                return act.TaskRan(
                    await run_task(task, self.env.tasks, partial(self.emit, step=step))
                )
            case act.ListCatalog():
                return await self.list_catalog()
            case act.AskLimit(crossing=crossing):
                await records_durable(self.env.recorder)
                return await self.ask_limit(crossing)
            case act.Finish():
                raise AssertionError("a finished turn performs nothing")
            case _:
                assert_never(action)

    # --- the parts of a step ----------------------------------------------------------------

    async def stream_step(self, state: TurnState, step: int) -> act.PartRan:
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
        return act.PartRan(part, response, tuple(calls))

    async def run_calls(self, state: TurnState, action: act.RunCalls) -> act.PartRan:
        step, response, first, resume = (
            action.step,
            action.at.response,
            action.at.first,
            action.at.resume,
        )
        calls = self.step_calls(state, step, response)

        async def later_part() -> StepPart:
            if isinstance(resume, Listed) and resume.announce:
                await calls.announce()
            return await calls.part(first, resume)

        key = part_key(step, first, _after(resume))
        part = await self.env.recorder.record(key, later_part, PARTS)
        return act.PartRan(part, response, tuple(calls.calls))

    async def run_batch(self, state: TurnState, action: act.RunBatch) -> act.BatchRan:
        """The batch's calls at once, each its own record: a recovered turn runs only the
        ones that did not finish. Results keep the model's order."""
        at = action.at
        calls = self.step_calls(state, action.step, at.response)
        record = self.env.recorder.record
        try:
            # a task group: when one record fails (the storage, a corrupt record), the
            # others stop too, as the rest of a part would
            async with asyncio.TaskGroup() as group:
                running = [
                    group.create_task(
                        record(call_key(action.step, i), partial(calls.run_one, i), OUTCOMES)
                    )
                    for i in range(at.first, at.until)
                ]
        except BaseExceptionGroup as failed:
            # the turn fails with the error itself (a named one keeps its name and fields)
            raise failed.exceptions[0] from None
        outcomes = tuple(task.result() for task in running)
        return act.BatchRan(outcomes, tuple(calls.calls), cancelled=self.env.signal.cancelled)

    async def ask(self, state: TurnState, action: act.AskPerson) -> act.PeopleAnswered:
        """Ask about every call of the round at once; a hook that fails closes the calls
        from the first asked on, then the turn fails with its error."""
        calls = self.calls_of(action.at.response)
        asks = action.at.asks
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
        return act.PeopleAnswered(answers, tuple(calls[a.call].name for a in asks))

    async def list_catalog(self) -> act.CatalogListed:
        """List the catalog's MCP servers (a record), between two parts of a step."""
        assert self.connections is not None, "only a started turn lists the catalog"
        self.runner.tools = await self.connections.list_catalog(self.runner.tools)
        return act.CatalogListed()

    async def ask_limit(self, crossing: LimitCrossed) -> act.LimitAnswered:
        ask = self.env.ask_limit
        if ask is None:
            raise limit_reached(crossing)
        decision = await ask(crossing)
        if decision is None:
            self.check()  # no answer: the turn was cancelled while a person was asked
        return act.LimitAnswered(crossing, decision)

    async def settle(self, state: TurnState, step: int, *, complete: bool) -> act.StepJudged:
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
            return act.StepJudged(complete, spend=spend)
        verdict = self.output.judge(list(state.turn_messages), complete=complete)
        match verdict:
            case Accepted():
                return act.StepJudged(True, spend=spend, answer=verdict)
            case Pending():
                return act.StepJudged(False, spend=spend)
            case Rejected():
                model_id = self.setup.client.model_id
                if state.finish == "max_tokens":
                    answered_by = state.answered_by or model_id
                    raise truncation(self.setup, answered_by, state.history, verdict.problem)
                self.output.count(verdict, model_id=model_id)
                tell = None if verdict.tell is None else user_message(verdict.tell)
                return act.StepJudged(False, spend=spend, tell=tell)
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
