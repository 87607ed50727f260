"""``run_agent``: one turn of the agent loop, as the driver of the turn's state machine.

The turn's state is one frozen value (``turn_state.TurnState``); ``transitions`` says what
the turn does next and what state follows each outcome; this module performs each action
(the model, the tools, people, tasks, the recorder) and emits the turn's events. The loop
knows the ``ModelClient`` protocol and resolved tools, nothing of providers or of
durability. It takes *what* runs (an ``AgentSetup``) and *where* (a ``TurnEnvironment``);
cancellation is cooperative and checked wherever control returns here.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from eve._attachments import attachments_of
from eve._redact import redact
from eve.connections import authorization
from eve.context.active import EveContext, use_context
from eve.events import (
    MessageReceivedData,
    TurnCancelledData,
    TurnCompletedData,
    TurnFailedData,
    TurnStartedData,
)
from eve.execution.call_asks import call_asks
from eve.execution.deps import deps_scope
from eve.execution.driver import TurnDriver
from eve.execution.environment import TurnEnvironment
from eve.execution.result import RunResult
from eve.execution.setup import AgentSetup
from eve.execution.tool_calls import ToolRunner
from eve.execution.tool_output import agent_output_limit
from eve.execution.transcript import TranscriptWriter
from eve.execution.transitions import apply, next_action, opening
from eve.execution.turn_actions import Finish
from eve.execution.turn_config import compaction_policy, output_check
from eve.execution.turn_io import Cancelled
from eve.execution.turn_start import prepare_turn
from eve.execution.turn_state import Done, TurnState
from eve.messages import Message, UserMessage, user_message


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
    driver = TurnDriver(
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
        compaction=compaction_policy(setup),
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
        async with deps_scope(context):  # the turn's deps close when it ends, however
            return await _run(driver, state, message)


async def _run(driver: TurnDriver, state: TurnState, message: str | UserMessage) -> RunResult:
    await driver.emit(TurnStartedData())
    try:
        user = user_message(message) if isinstance(message, str) else message
        state = state.with_messages(user)
        driver.write(state)
        received = MessageReceivedData(message=user.text, attachments=attachments_of(user.parts))
        await driver.emit(received)
        await driver.connect()
        driver.setup = await prepare_turn(driver.setup, driver.env, driver.context, user.text)
        state = msgspec.structs.replace(state, rules=driver.rules())
        state = msgspec.structs.replace(state, at=opening(state))
        while not isinstance(action := next_action(state), Finish):
            state = apply(state, await driver.perform(state, action))
            driver.write(state)
        stop = action.stop
    except Cancelled:
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
