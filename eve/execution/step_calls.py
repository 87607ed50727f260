"""Running one step's tool calls for its parts: admission in order, concurrent batches,
asking about several calls in one round, and each result capped, announced and kept.

A part (``checkpoints``) runs calls from its first one on. Calls that may run concurrently
(``ToolRunner.concurrent``) gather into a batch; a batch of two or more stops the part
(``RunsBatch``) so each of its calls is recorded on its own (``run_one``), and a batch of
one runs inside the part, as a call that must run alone does. Whatever stops the part
(a person to ask, a task, a listing, cancellation) runs the batch before it first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import assert_never

import msgspec

from eve.events import ActionResultData, ActionsRequestedData, EventData, SkillLoadedData
from eve.execution.catalog_calls import connection_of, loaded_skill, requested
from eve.execution.checkpoints import (
    Aborted,
    AsksPerson,
    NeedsListing,
    PersonAsk,
    RanAll,
    RunsBatch,
    StartsTask,
    StepPart,
)
from eve.execution.connections import TurnConnections
from eve.execution.response import ModelResponse
from eve.execution.tool_calls import (
    ABORTED_BEFORE_EXECUTION,
    Admitted,
    CallOutcome,
    NeedsPerson,
    ToolRunner,
    outcome,
)
from eve.execution.tool_output import bounded
from eve.execution.turn_state import Answered, Fresh, Listed, PersonAnswer, Resume, Settled
from eve.messages import Message, ToolCall
from eve.runtime.resolved import is_task

#: publishes an event of the step
Emit = Callable[[EventData], Awaitable[None]]
Admission = Admitted | CallOutcome | NeedsPerson


@dataclass(kw_only=True, slots=True)
class StepCalls:
    """The calls of one step's response, and what running them needs."""

    runner: ToolRunner
    emit: Emit
    step: int
    response: ModelResponse
    #: the response's calls as they run (an ``eve__tool`` call as the entry it names)
    calls: Sequence[ToolCall]
    #: the step's answers from a person, by call index
    answers: Mapping[int, PersonAnswer]
    approved_once: AbstractSet[str]
    connections: TurnConnections | None
    #: keeps a result on disk (the transcript) as soon as it comes, before the next call
    keep: Callable[[Message], None]

    async def announce(self) -> None:
        """``actions.requested``: the response's calls, each as it runs."""
        made = self.response.tool_calls
        if made:
            tools = self.runner.tools
            actions = [requested(c, r, tools) for c, r in zip(made, self.calls, strict=True)]
            await self.emit(ActionsRequestedData(actions=actions))

    async def part(
        self, first: int, resume: Resume, *, response: ModelResponse | None = None
    ) -> StepPart:
        """Run the calls from ``first`` on, up to one the loop must handle between parts.

        ``response`` is recorded with the part (the step's first part only); ``resume``
        says what is settled about the call at ``first``.
        """
        done: list[CallOutcome] = []
        batch: list[tuple[ToolCall, Admitted | CallOutcome]] = []
        concurrent = 0  # how many calls in the batch still run
        for position in range(first, len(self.calls)):
            # a settled task has run: its result is recorded even when the turn was
            # cancelled meanwhile; only calls not yet run are closed as aborted
            settled = position == first and isinstance(resume, Settled)
            if self.runner.signal.cancelled and not settled:
                done.extend(await self._run(_results(batch)))
                return Aborted(response=response, first_call=first, outcomes=done)
            if self._needs_listing(position):
                if concurrent > 1:
                    return await self._stop_for(batch, response, first, done, until=position)
                done.extend(await self._run(batch))
                return NeedsListing(
                    response=response, first_call=first, outcomes=done, call=position
                )
            admitted = await self._admit(position, resume if position == first else Fresh())
            if self._joins_batch(admitted):
                batch.append((self.calls[position], admitted))  # type: ignore[arg-type]
                concurrent += isinstance(admitted, Admitted)
                continue
            if concurrent > 1:
                return await self._stop_for(batch, response, first, done, until=position)
            done.extend(await self._run(batch))
            batch, concurrent = [], 0
            match admitted:
                case NeedsPerson(rule=rule):
                    asks = await self._asks(position, rule)
                    return AsksPerson(
                        response=response, first_call=first, outcomes=done, call=position, asks=asks
                    )
                case Admitted() if is_task(admitted.tool):
                    return StartsTask(
                        response=response, first_call=first, outcomes=done, call=position
                    )
                case Admitted() | CallOutcome():
                    done.extend(await self._run([(self.calls[position], admitted)]))
                case _:
                    assert_never(admitted)
        if concurrent > 1:
            until = len(self.calls)
            return await self._stop_for(batch, response, first, done, until=until)
        done.extend(await self._run(batch))
        return RanAll(response=response, first_call=first, outcomes=done)

    async def _stop_for(
        self,
        batch: Sequence[tuple[ToolCall, Admitted | CallOutcome]],
        response: ModelResponse | None,
        first: int,
        done: list[CallOutcome],
        *,
        until: int,
    ) -> RunsBatch:
        """Stop the part before ``batch``'s calls, which run each as its own record. The
        results it begins with stay in the part: a settled task's is not run again."""
        done.extend(await self._run(_results(batch)))
        return RunsBatch(response=response, first_call=first, outcomes=done, until=until)

    async def run_one(self, position: int) -> CallOutcome:
        """Call ``position`` of a concurrent batch, from its admission to its result (the
        loop keeps the batch's results once all are in, in the model's order)."""
        call = self.calls[position]
        if self.runner.signal.cancelled:
            # a call of the batch cancelled the turn before this one started
            return await self._finish(call, outcome(call, ABORTED_BEFORE_EXECUTION, "failed"))
        admitted = await self._admit(position, Fresh())
        match admitted:
            case NeedsPerson(rule=rule):
                # admitted when the batch formed; only a policy that changed its mind
                # since (a recovered turn) gets here
                text = f"{call.name} needs approval ({rule}) it did not have when it was due"
                return await self._finish(call, outcome(call, text, "rejected"))
            case Admitted() | CallOutcome():
                [result] = await self._run([(call, admitted)], keep=False)
                return result
            case _:
                assert_never(admitted)

    def _needs_listing(self, position: int) -> bool:
        connections = self.connections
        if connections is None or not connections.pending:
            return False
        return connections.needs_listing(self.response.tool_calls[position])

    async def _admit(self, position: int, resume: Resume) -> Admission:
        call = self.calls[position]
        match resume:
            case Settled(outcome=settled):
                return settled
            case Fresh() | Answered() | Listed():
                pass
            case _:
                assert_never(resume)
        answer = self.answers.get(position)
        if answer is not None:
            return self.runner.answered(call, answer.approved)
        return await self.runner.admit(call, self.approved_once)

    def _joins_batch(self, admitted: Admission) -> bool:
        """Whether ``admitted`` joins the batch (a result already, or a call that may run
        concurrently); otherwise the batch runs first, and the part may stop at it."""
        match admitted:
            case CallOutcome():
                return True
            case Admitted():
                return self.runner.concurrent(admitted)
            case NeedsPerson():
                return False
            case _:
                assert_never(admitted)

    async def _asks(self, position: int, rule: str) -> list[PersonAsk]:
        """The calls from ``position`` on a person must approve, asked in one round; a
        ``once()`` tool is asked about once (its answer stands for its other calls)."""
        asks = [PersonAsk(call=position, rule=rule)]
        once = {self.calls[position].name} if rule == "once" else set()
        for later in range(position + 1, len(self.calls)):
            if self._needs_listing(later):
                break  # its tool is not known until the catalog is listed
            admitted = await self._admit(later, Fresh())
            call = self.calls[later]
            if not isinstance(admitted, NeedsPerson) or call.name in once:
                continue
            if admitted.rule == "once":
                once.add(call.name)
            asks.append(PersonAsk(call=later, rule=admitted.rule))
        return asks

    async def _run(
        self, batch: Sequence[tuple[ToolCall, Admitted | CallOutcome]], *, keep: bool = True
    ) -> list[CallOutcome]:
        """Run the batch's calls (at most one needs running) and keep their results."""
        results: list[CallOutcome] = []
        for call, entry in batch:
            if isinstance(entry, Admitted):
                entry = await self.runner.run_admitted(entry, self.step)  # noqa: PLW2901
            result = await self._finish(call, entry)
            if keep:
                self.keep(result.result)
            results.append(result)
        return results

    async def _finish(self, call: ToolCall, result: CallOutcome) -> CallOutcome:
        # capped before it is recorded: history, checkpoint and event never hold it whole
        result = bounded(result, self.runner.output_limit_of(call))
        skill = loaded_skill(call, result)
        if skill is not None:
            await self.emit(SkillLoadedData(call_id=call.id, name=skill))
        data = ActionResultData(
            call_id=call.id,
            name=call.name,
            status=result.status,
            output=result.result.content if result.stored_output is None else result.stored_output,
            connection=connection_of(call.name, self.runner.tools),
            traceback=result.traceback,
        )
        await self.emit(data)
        # a replayed record emits no events: it needs only what the model reads
        return msgspec.structs.replace(result, stored_output=None, traceback=None)


def _results(
    batch: Sequence[tuple[ToolCall, Admitted | CallOutcome]],
) -> list[tuple[ToolCall, Admitted | CallOutcome]]:
    """The batch's leading entries that are results already (run nothing more)."""
    kept: list[tuple[ToolCall, Admitted | CallOutcome]] = []
    for entry in batch:
        if isinstance(entry[1], Admitted):
            break
        kept.append(entry)
    return kept
