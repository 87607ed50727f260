"""Building blocks for loop tests: live tools without files, scripted responses."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eve.authoring.tools import ToolDefinition
from eve.compiler.normalize import tool_entry
from eve.execution import RunResult, TurnEnvironment, agent_setup, run_agent
from eve.execution.events import HookDispatcher
from eve.messages import Message
from eve.models.base import ModelClient
from eve.models.events import Done, ModelEvent, TextDelta, TokenUsage, ToolCallEnd, ToolCallStart
from eve.runtime.resolve_tool import bind_tool
from eve.runtime.resolved import ResolvedTool


def live(name: str, definition: ToolDefinition) -> ResolvedTool:
    entry = tool_entry(
        definition,
        name=name,
        logical_path=f"agent/tools/{name}.py",
        source_id=f"tools/{name}.py",
        export_name="default",
        factory=False,
    )
    return bind_tool(entry, definition)


def text(value: str, usage: TokenUsage | None = None) -> list[ModelEvent]:
    return [TextDelta(text=value), Done(stop_reason="end_turn", usage=usage or TokenUsage())]


def calls(*pairs: tuple[str, dict[str, Any]], prefix: str = "c") -> list[ModelEvent]:
    events: list[ModelEvent] = []
    for i, (name, data) in enumerate(pairs):
        events += [
            ToolCallStart(id=f"{prefix}{i}", name=name),
            ToolCallEnd(id=f"{prefix}{i}", name=name, input=data),
        ]
    return [
        *events,
        Done(stop_reason="tool_use", usage=TokenUsage(input_tokens=10, output_tokens=2)),
    ]


class Script:
    """Responder returning the n-th list of events for the n-th request."""

    def __init__(self, *responses: list[ModelEvent]) -> None:
        self.responses = list(responses)
        self.count = 0

    def __call__(self, request: object) -> list[ModelEvent]:
        self.count += 1
        return self.responses[self.count - 1]


async def turn(
    *,
    client: ModelClient,
    tools: Sequence[ResolvedTool] = (),
    user_message: str = "hi",
    system: str = "",
    messages: Sequence[Message] = (),
    max_turns: int = 10,
    context_budget_tokens: int | None = None,
    workspace: Path | None = None,
    hooks: HookDispatcher | None = None,
    reasoning: str | None = None,
    node_id: str = "__root__",
    **env: Any,
) -> RunResult:
    """One turn of an agent made of ``tools``: ``run_agent`` with an ``agent_setup`` and a
    ``TurnEnvironment`` of the remaining keywords (``signal``, ``approve``, ``recorder`` …)."""
    setup = agent_setup(
        client,
        instructions=system,
        tools=tools,
        max_turns=max_turns,
        workspace=workspace,
        context_budget_tokens=context_budget_tokens,
        hooks=hooks,
        reasoning=reasoning,
        node_id=node_id,
    )
    return await run_agent(setup, user_message, history=messages, env=TurnEnvironment(**env))
