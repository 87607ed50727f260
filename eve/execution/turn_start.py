"""What a turn sets up before its first step: its deps, its dynamic instructions and what
memory recalls, in that order (the instructions may read the deps).

The dynamic part of the prompt (``instructions.py``) is evaluated once per turn and is a
recorded value: a turn replayed after a crash sends the prompt its first run sent, even
when the function would now write another, so one turn never runs under two prompts.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import replace

import msgspec

from eve.authoring.deps import TurnInfo
from eve.authoring.instructions import InstructionsContext
from eve.context.active import EveContext
from eve.errors import InstructionsFailed
from eve.execution.deps import open_deps
from eve.execution.environment import TurnEnvironment
from eve.execution.memory import with_recall
from eve.execution.recording import RecordKind
from eve.execution.setup import AgentSetup
from eve.runtime.resolved import ResolvedInstructions

#: the recorded value a turn's dynamic instructions are (``StepRecorder.value``)
INSTRUCTIONS_STEP = "instructions.dynamic"


class DynamicPrompt(msgspec.Struct, frozen=True, kw_only=True):
    """What a node's instructions.py returned for one turn."""

    text: str


#: how the recorded prompt reads back
DYNAMIC_PROMPT: RecordKind[DynamicPrompt] = RecordKind(DynamicPrompt, "a dynamic prompt")


async def prepare_turn(
    setup: AgentSetup, env: TurnEnvironment, context: EveContext, message: str
) -> AgentSetup:
    """Build the turn's deps into ``context`` and return ``setup`` with this turn's prompt:
    instructions.md, then what instructions.py returned, then what memory recalls."""
    info = TurnInfo(
        session_id=env.session_id,
        turn_id=env.turn_id,
        node_id=setup.agent.node_id,
        principal=context.principal,
        workspace=setup.workspace,
    )
    await open_deps(setup.agent.deps, info, context)
    setup = await with_instructions(setup, env, info, context, message)
    return await with_recall(setup, env, context.principal, message)


async def with_instructions(
    setup: AgentSetup, env: TurnEnvironment, info: TurnInfo, context: EveContext, message: str
) -> AgentSetup:
    """``setup`` with its dynamic instructions' text for this turn after the static text."""
    dynamic = setup.agent.dynamic_instructions
    if dynamic is None:
        return setup
    ctx: InstructionsContext[object] = InstructionsContext(
        **vars(info), message=message, deps=context.deps
    )

    async def produce() -> DynamicPrompt:
        return DynamicPrompt(text=await render(dynamic, ctx))

    recorded = await env.recorder.record(INSTRUCTIONS_STEP, produce, DYNAMIC_PROMPT)
    agent = setup.agent
    return replace(
        setup, agent=replace(agent, instructions=joined(agent.instructions, recorded.text))
    )


async def render(dynamic: ResolvedInstructions, ctx: InstructionsContext[object]) -> str:
    """Call the function (a sync one in a thread, as a sync tool); ``InstructionsFailed``
    when it raises or returns no string."""
    where = dynamic.logical_path or f"the dynamic instructions of node {ctx.node_id!r}"
    try:
        if inspect.iscoroutinefunction(dynamic.render):
            text = await dynamic.render(ctx)
        else:
            text = await asyncio.to_thread(dynamic.render, ctx)
            if inspect.isawaitable(text):
                text = await text
    except Exception as error:
        raise InstructionsFailed(
            f"{where} raised {type(error).__name__}: {error}; the turn did not start",
            node_id=ctx.node_id,
            logical_path=dynamic.logical_path,
        ) from error
    if not isinstance(text, str):
        raise InstructionsFailed(
            f"{where} returned {type(text).__name__}, not the prompt as a str",
            node_id=ctx.node_id,
            logical_path=dynamic.logical_path,
        )
    return text


def joined(static: str, dynamic: str) -> str:
    """The prompt of a turn: the static text, a blank line, the dynamic text."""
    parts = [part for part in (static.strip(), dynamic.strip()) if part]
    return "\n\n".join(parts) + "\n" if parts else ""
