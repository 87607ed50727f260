"""A tool call's answers to the MCP server running it: forms for a person, and the agent's
model for sampling (``eve.runtime.server_asks`` holds the values; the pool routes them).

The turn says who answers a form (``TurnEnvironment.forms``: a durable session parks on
it, ``eve run`` asks at the terminal; without one a form is cancelled, as no one saw it),
and sampling runs the node's own model client, bounded by the connection's
``sampling_max_tokens``, its tokens and cost kept on the call (``spent``) so the loop
counts them in the step, the turn and the session like a subagent's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, assert_never

from eve._cancellation import CancelSignal
from eve.costs import Spend, price
from eve.execution.environment import TurnEnvironment
from eve.execution.model_stream import stream_response
from eve.execution.setup import AgentSetup
from eve.manifest import ModelPrice
from eve.messages import Message, ToolCall, assistant_message, user_message
from eve.models.base import ModelClient, ModelRequest
from eve.runtime.server_asks import (
    CallAsks,
    FormAnswer,
    FormAsk,
    Forms,
    Sampled,
    SamplingAsk,
    SamplingRefused,
    SentCall,
    SentCalls,
)


@dataclass(kw_only=True)
class TurnCallAsks:
    """One call's ``CallAsks``: its turn's forms and model."""

    call: ToolCall
    forms: Forms | None
    #: what the turn records of its MCP calls (a durable session's); None: nothing
    sent_calls: SentCalls | None
    client: ModelClient
    prices: Mapping[str, ModelPrice]
    signal: CancelSignal
    node_id: str
    spent: Spend = field(default_factory=Spend)

    async def elicit(self, connection: str, message: str, schema: dict[str, Any]) -> FormAnswer:
        if self.forms is None or self.signal.cancelled:
            return FormAnswer(action="cancel")
        form = FormAsk(
            call_id=self.call.id,
            tool_name=self.call.name,
            connection=connection,
            message=message,
            schema=schema,
        )
        return await self.forms.ask(form)

    async def sample(self, ask: SamplingAsk) -> Sampled | SamplingRefused:
        match ask.policy:
            case "never":
                return SamplingRefused(
                    reason=f"connection {ask.connection!r} does not allow sampling"
                )
            case "ask":
                refused = await self._refused(ask)
                if refused is not None:
                    return refused
            case "always":
                pass
            case _:
                assert_never(ask.policy)
        request = ModelRequest(
            system=ask.system or "",
            messages=[_message(role, text) for role, text in ask.messages],
            max_output_tokens=ask.max_tokens,
            signal=self.signal,
            node_id=self.node_id,
        )
        response = await stream_response(self.client, request, step=None)
        model = response.model or self.client.model_id
        cost = price(model, response.usage, self.prices)
        self.spent = self.spent + Spend(usage=response.usage, cost=cost)
        stop = "maxTokens" if response.finish_reason == "max_tokens" else "endTurn"
        return Sampled(text=response.text, model=model, stop_reason=stop)

    async def _refused(self, ask: SamplingAsk) -> SamplingRefused | None:
        """Why a person did not allow ``ask``; None when they did."""
        if self.forms is None:
            return SamplingRefused(reason="no one here can allow it (sampling='ask')")
        last = ask.messages[-1][1]
        form = FormAsk(
            call_id=self.call.id,
            tool_name=self.call.name,
            connection=ask.connection,
            message=(
                f"{ask.connection} asks to use the agent's model (up to {ask.max_tokens} "
                f"tokens) with: {last}"
            ),
            schema={},
            purpose="sampling",
        )
        answer = await self.forms.ask(form)
        if answer.action != "accept":
            return SamplingRefused(reason=f"a person answered {answer.action}")
        return None

    @property
    def cancelled(self) -> bool:
        return self.signal.cancelled

    async def sent_before(self) -> SentCall | None:
        return None if self.sent_calls is None else await self.sent_calls.sent(self.call.id)

    async def sending(self, *, task_id: str | None = None) -> None:
        if self.sent_calls is not None:
            await self.sent_calls.record(self.call.id, task_id=task_id)


def call_asks(setup: AgentSetup, env: TurnEnvironment) -> Callable[[ToolCall], CallAsks]:
    """What each call of a turn run with ``setup`` in ``env`` offers its server."""
    prices = setup.agent.config.model_prices

    def asks(call: ToolCall) -> CallAsks:
        return TurnCallAsks(
            call=call,
            forms=env.forms,
            sent_calls=env.sent_calls,
            client=setup.client,
            prices=prices,
            signal=env.signal,
            node_id=setup.agent.node_id,
        )

    return asks


def _message(role: str, text: str) -> Message:
    return user_message(text) if role == "user" else assistant_message(text)
