"""``TurnIO``: what a turn's driver reaches beside its state: the model, the tools, events,
the transcript and the turn's environment; the plumbing under ``driver.TurnDriver``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import msgspec

from eve.context.active import EveContext
from eve.events import EventData
from eve.execution.catalog_calls import as_entries
from eve.execution.compaction import Policy
from eve.execution.connections import TurnConnections
from eve.execution.environment import TurnEnvironment
from eve.execution.events import EventEmitter
from eve.execution.model_chain import stream_chain
from eve.execution.output import OutputCheck
from eve.execution.response import ModelResponse
from eve.execution.setup import AgentSetup
from eve.execution.step_calls import StepCalls
from eve.execution.tasks import TaskCall
from eve.execution.tool_calls import ToolRunner
from eve.execution.transcript import TranscriptWriter
from eve.execution.trim import trim_history
from eve.execution.turn_config import (
    Offer,
    OutputBounds,
    offer_of,
    output_bounds,
    step_request,
)
from eve.execution.turn_state import TurnRules, TurnState
from eve.messages import Message, ToolCall, model_view
from eve.models.base import ModelClient, ModelRequest
from eve.runtime.resolved import ResolvedTool, is_task

D = TypeVar("D", bound=EventData)


class Cancelled(Exception):
    """The turn's signal was found cancelled where control returned to the loop."""


@dataclass(kw_only=True)
class TurnIO:
    """The setup, environment and collaborators of one turn, and the plumbing over them."""

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
    #: when the node compacts (None: it does not)
    compaction: Policy | None = None
    #: how much of the history the transcript holds
    written: int = 0
    #: the runner's tools as last offered, and the offer (``offer``)
    offered: tuple[Mapping[str, ResolvedTool], Offer] | None = None
    #: the setup the bounds were found for, and each model's (``bounds``)
    output_bounds: tuple[AgentSetup, dict[str, OutputBounds]] | None = None

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
            raise Cancelled

    def offer(self) -> Offer:
        """What each request offers of the runner's tools, built again only when the
        turn's tools change (its MCP connections started, the catalog listed): those
        replace ``runner.tools``, never change it in place."""
        tools = self.runner.tools
        made = self.offered
        if made is None or made[0] is not tools:
            made = self.offered = (tools, offer_of(tools.values()))
        return made[1]

    def bounds(self, model_id: str) -> OutputBounds:
        """The output bounds of ``model_id``'s requests, found once per model and setup
        (the turn's setup is set before its first step: ``prepare_turn``)."""
        made = self.output_bounds
        if made is None or made[0] is not self.setup:
            made = self.output_bounds = (self.setup, {})
        setup, found = made
        known = found.get(model_id)
        if known is None:
            known = found[model_id] = output_bounds(setup, model_id)
        return known

    async def stream(self, state: TurnState, step: int) -> ModelResponse:
        self.check()

        def request(client: ModelClient) -> ModelRequest:
            """The step's request as ``client`` is sent it (its output limit is its own)."""
            native = self.output is not None and self.output.native
            return step_request(
                self.setup,
                client,
                offer=self.offer(),
                bounds=self.bounds(client.model_id),
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
        await emit_in_turn(self.emitter, self.env.turn_id, data, step)

    def keep(self, message: Message) -> None:
        """Append ``message`` to the transcript now, ahead of the state that records it."""
        if self.transcript is not None:
            self.transcript.append(message)
            self.written += 1

    def write(self, state: TurnState) -> None:
        """Append what the transcript does not hold yet of ``state``'s history."""
        if self.transcript is None:
            return
        for message in state.history[self.written :]:
            self.transcript.append(message)
        self.written = len(state.history)

    async def connect(self) -> None:
        """Add the tools of the node's MCP connections that every request offers; the
        catalog's wait until the turn needs them (``execution.connections``)."""
        # not ``self.emit``: the connections would hold this driver through its bound method,
        # a cycle that outlives the turn until a full collection (issue 31)
        emit = partial(emit_in_turn, self.emitter, self.env.turn_id)
        self.connections = TurnConnections(
            self.setup.agent, self.env.recorder, emit, workspace=self.setup.workspace
        )
        self.runner.tools = await self.connections.start(self.runner.tools)

    def rules(self) -> TurnRules:
        setup = self.setup
        return TurnRules(
            max_turns=setup.max_turns,
            limits=setup.agent.config.limits,
            compaction=self.compaction,
            system=setup.agent.instructions,
            spent_before=self.env.spent_before,
            model_prices=setup.agent.config.model_prices,
            model_id=setup.client.model_id,
        )


async def emit_in_turn(
    emitter: EventEmitter, turn_id: str, data: D, step: int | None = None
) -> None:
    """Publish ``data`` through ``emitter`` as turn ``turn_id``'s event (inside step
    ``step``, when given)."""
    await emitter.emit(msgspec.structs.replace(data, turn_id=turn_id, step_index=step))


def _budget(setup: AgentSetup, state: TurnState) -> int | None:
    budgets = [b for b in (setup.context_budget_tokens, state.trim_to) if b is not None]
    return min(budgets) if budgets else None
