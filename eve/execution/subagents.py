"""A subagent call: one turn of a child session, whose final text is the call's result.

The child session has its own history (it starts empty: the subagent sees only the
message it was sent), its own state (``define_state`` values are never shared with the
caller) and the tools of its node (``runtime.delegation``). Its events join the caller's
stream, each carrying ``node_id`` and ``parent`` (the caller's session and call), so one
stream shows the whole tree of work.

A subagent whose ``agent.py`` says ``runtime_config=KEY`` is configured at each call from
the value of that context key in the caller's session. That value replaces the compiled
model, reasoning, limits and context window as a whole: nothing it leaves out is taken
from ``agent.py``, so a call never runs with half of one configuration and half of
another. A subagent that takes its configuration at run time and finds none refuses to run.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from typing import Any

import msgspec
import pydantic

from eve._format import pydantic_problems
from eve.authoring.agent import RuntimeConfig
from eve.context.active import EveContext
from eve.costs import Spend
from eve.errors import EveError, SubagentConfigInvalid, SubagentConfigMissing
from eve.events import Delegation, ParentLink
from eve.execution.environment import TurnEnvironment
from eve.execution.events import EventEmitter
from eve.execution.loop import run_agent
from eve.execution.output import output_text
from eve.execution.recording import Inline, StepRecorder
from eve.execution.result import RunResult
from eve.execution.setup import DEFAULT_MAX_TURNS, AgentSetup, context_budget
from eve.execution.tasks import TaskCall, TaskRunner, completed, failed
from eve.execution.tool_calls import ApprovalHook, CallOutcome, outcome
from eve.manifest import ROOT_NODE_ID
from eve.models.registry import create_client
from eve.runtime.server_asks import Forms, SentCalls


def child_node_id(caller_node: str, name: str) -> str:
    return name if caller_node == ROOT_NODE_ID else f"{caller_node}/{name}"


def child_session_id(task_id: str) -> str:
    """Derived from the task id: the same call always names the same child session, and
    it is as hard to guess as the caller's session id it comes from."""
    return "ses_" + hashlib.sha256(task_id.encode()).hexdigest()[:32]


def effective_setup(setup: AgentSetup, caller: EveContext) -> AgentSetup:
    """The setup one call runs under: the compiled one, or the runtime configuration."""
    key = setup.agent.config.runtime_config
    if key is None:
        return setup
    node = setup.agent.node_id
    if key not in caller.values:
        raise SubagentConfigMissing(
            f"subagent '{node}' is configured at run time from the context key {key!r}, and "
            "nothing set it in this session: set it (KEY.set(RuntimeConfig(model=...))) in a "
            "tool or hook before the model calls the subagent",
            node_id=node,
            key=key,
        )
    value: Any = caller.values[key]
    try:
        config = RuntimeConfig.model_validate(
            value.model_dump() if isinstance(value, RuntimeConfig) else value
        )
    except pydantic.ValidationError as error:
        problems = pydantic_problems(error, top=key)
        raise SubagentConfigInvalid(
            f"the runtime configuration of subagent '{node}' in {key!r} is invalid: {problems}",
            node_id=node,
            key=key,
        ) from None
    return replace(
        setup,
        # a configuration given at run time names one model: the compiled chain is replaced
        fallbacks=(),
        client=create_client(
            config.model,
            app_root=setup.app_root,
            env=os.environ,
            openai_api=setup.agent.config.openai_api,
        ),
        reasoning=config.reasoning,
        max_turns=config.limits.max_turns or DEFAULT_MAX_TURNS,
        context_budget_tokens=context_budget(config.model_context_window_tokens),
    )


@dataclass(frozen=True, kw_only=True)
class SubagentRun:
    outcome: CallOutcome
    #: the child's turn, when it ran (its history and usage)
    result: RunResult | None = None


def _outcome(task: TaskCall, result: RunResult, setup: AgentSetup) -> CallOutcome:
    call = task.call
    if result.stop_reason == "aborted":
        return outcome(call, "the subagent's turn was cancelled", "failed")
    if result.output is not None:
        # a typed answer reaches the caller as its JSON, the object its schema describes
        return completed(call, output_text(result.output))
    if result.final_text:
        return completed(call, result.final_text)
    return outcome(
        call,
        f"the subagent stopped after {setup.max_turns} model request(s) without an answer",
        "failed",
    )


async def run_subagent(task: TaskCall, setup: AgentSetup, env: TurnEnvironment) -> SubagentRun:
    """Run the child's turn on the call's ``message`` in ``env`` (the child session's: its
    ids, emitter, context, approvals, tasks and recorder; the caller's turn id and cancel
    signal); failures become the outcome."""
    call = task.call
    try:
        effective = effective_setup(setup, task.context)
        message = task.tool.validator.validate(call.input)
    except EveError as error:
        return SubagentRun(outcome=failed(call, error))
    try:
        result = await run_agent(effective, str(message["message"]), env=env)
    except Exception as error:
        return SubagentRun(outcome=failed(call, error))
    # the child's tokens are the caller's too: the outcome carries them up (eve.costs)
    spend = Spend(usage=result.usage, cost=result.cost)
    done = msgspec.structs.replace(_outcome(task, result, effective), spend=spend)
    return SubagentRun(outcome=done, result=result)


def child_environment(
    task: TaskCall,
    session_id: str,
    *,
    emitter: EventEmitter,
    context: EveContext,
    approve: ApprovalHook | None,
    tasks: TaskRunner,
    recorder: StepRecorder | None = None,
    forms: Forms | None = None,
    sent_calls: SentCalls | None = None,
) -> TurnEnvironment:
    """The environment of the child session a task call runs: named after the caller's
    turn (so a reader of that turn sees the child's too) and cancelled with it. Its
    ``context`` is its own: state is never shared with the caller."""
    return TurnEnvironment(
        session_id=session_id,
        turn_id=task.turn_id,
        signal=task.signal,
        emitter=emitter,
        context=context,
        approve=approve,
        tasks=tasks,
        recorder=recorder or Inline(),
        forms=forms,
        sent_calls=sent_calls,
    )


def link(task: TaskCall, node_id: str) -> Delegation:
    """What every event of the child session carries: its node and the call that made it."""
    return Delegation(
        node_id=node_id, parent=ParentLink(session_id=task.session_id, call_id=task.call.id)
    )
