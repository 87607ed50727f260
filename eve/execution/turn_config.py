"""What a turn derives from its setup: which tools the model is offered, the check of a
typed answer, and when to compact."""

from __future__ import annotations

from typing import TypeGuard, assert_never

from eve.execution.compaction import Policy, policy_for, window_tokens
from eve.execution.output import OutputCheck
from eve.execution.setup import AgentSetup
from eve.runtime.resolved import (
    ResolvedFunctionTool,
    ResolvedProviderTool,
    ResolvedSubagent,
    ResolvedTool,
    ResolvedWorkflowTool,
    RunnableTool,
)


def offered(tool: ResolvedTool) -> TypeGuard[RunnableTool]:
    """Whether the model finds ``tool`` in its tool list: a deferred tool is reached through
    the catalog, and a provider tool is declared to the provider as its own."""
    match tool:
        case ResolvedFunctionTool() | ResolvedWorkflowTool():
            return not tool.entry.deferred
        case ResolvedSubagent():
            return True
        case ResolvedProviderTool():
            return False
        case _:
            assert_never(tool)


def output_check(setup: AgentSetup) -> OutputCheck | None:
    output = setup.agent.output
    if output is None:
        return None
    return OutputCheck(output, native=bool(getattr(setup.client, "structured_output", False)))


def compaction_policy(setup: AgentSetup) -> Policy | None:
    config = setup.agent.config
    compiled = config.context_window.tokens if config.context_window is not None else None
    model_id = setup.client.model_id
    tokens = window_tokens(model_id, override=config.model_context_window_tokens, compiled=compiled)
    return policy_for(config.compaction, model_id=model_id, window_tokens=tokens)
