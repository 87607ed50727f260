"""What a turn derives from its setup: which tools the model is offered, the check of a
typed answer, when to compact, and how many tokens each model of the chain may answer with.

Windows follow the model that runs, not the one agent.py names: ``eve run --model`` and a
fallback chain's later models are measured against their own windows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard, assert_never

from eve._cancellation import CancelSignal
from eve._model_windows import known_window
from eve.errors import EmptyModelResponse, OutputTruncated
from eve.execution.compaction import (
    Policy,
    context_tokens,
    policy_for,
    warn_unknown_window,
    window_tokens,
)
from eve.execution.output import OutputCheck
from eve.execution.setup import AgentSetup
from eve.messages import Message, StopReason, model_view
from eve.models.base import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    ModelClient,
    ModelRequest,
    ProviderToolDeclaration,
    ToolDeclaration,
)
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


@dataclass(frozen=True)
class Offer:
    """What a request offers the model of ``tools``: built once while they stay the same
    (each step's request offers them again)."""

    tools: tuple[ToolDeclaration, ...]
    provider_tools: tuple[ProviderToolDeclaration, ...]


def offer_of(tools: Iterable[ResolvedTool]) -> Offer:
    tools = list(tools)
    return Offer(
        tools=tuple(
            ToolDeclaration(
                name=t.name, description=t.description, input_schema=t.entry.input_schema
            )
            for t in tools
            if offered(t)
        ),
        provider_tools=tuple(
            ProviderToolDeclaration(
                name=t.name,
                provider=t.entry.provider.provider,
                type=t.entry.provider.type,
                config=t.entry.provider.config,
            )
            for t in tools
            if isinstance(t, ResolvedProviderTool)
        ),
    )


def step_request(
    setup: AgentSetup,
    client: ModelClient,
    *,
    offer: Offer,
    bounds: OutputBounds,
    messages: list[Message],
    output_schema: dict[str, Any] | None,
    signal: CancelSignal,
) -> ModelRequest:
    """A step's request of ``messages`` as ``client`` is sent it: the tools it is offered,
    the node's settings, and an output limit of that model's own (``bounds``: its)."""
    config = setup.agent.config
    return ModelRequest(
        system=setup.agent.instructions,
        messages=messages,
        # lists of the request's own: an adapter may change them
        tools=list(offer.tools),
        reasoning=setup.reasoning,
        thinking=config.thinking,
        prompt_cache=config.prompt_cache,
        retries=config.retries,
        settings=config.model_settings,
        max_output_tokens=bounds.limit(setup.agent.instructions, messages),
        output_schema=output_schema,
        node_id=setup.agent.node_id,
        provider_tools=list(offer.provider_tools),
        signal=signal,
    )


def output_check(setup: AgentSetup) -> OutputCheck | None:
    output = setup.agent.output
    if output is None:
        return None
    # any model of the chain may give the answer, so the schema is native only if all take it
    native = all(getattr(client, "structured_output", False) for client in setup.models)
    return OutputCheck(output, native=native)


#: the fewest output tokens a request asks for, however full its window: a request left
#: less room than this fails with the provider's window error, which says what is wrong
MIN_OUTPUT_TOKENS = 256


def model_window(setup: AgentSetup, model_id: str) -> int | None:
    """The window ``model_id`` runs with in this node; None when unknown."""
    config = setup.agent.config
    compiled = config.context_window.tokens if config.context_window is not None else None
    # the compiled window is the configured model's: never another model's
    own = compiled if model_id == config.model else None
    return window_tokens(model_id, override=config.model_context_window_tokens, compiled=own)


@dataclass(frozen=True)
class OutputBounds:
    """What bounds the output tokens of a node's requests to one model, but their context:
    the same for each step's request (``step_request``), so found once a turn."""

    #: ``model_settings.max_output_tokens`` (else eve's default), within the model's own limit
    cap: int
    #: the model's window; None when unknown
    window: int | None

    def limit(self, system: str, messages: Sequence[Message]) -> int:
        """The output limit of a request of ``system`` and ``messages``: no more than the
        room the window leaves after their context (estimated tokens). A server that
        refuses prompt + max_tokens over its window would otherwise refuse every request."""
        if self.window is None:
            return self.cap
        # estimated only against a window: the estimate reads every message of the request
        room = self.window - context_tokens(system, messages)
        return min(self.cap, max(room, MIN_OUTPUT_TOKENS))


def output_bounds(setup: AgentSetup, model_id: str) -> OutputBounds:
    asked = setup.agent.config.model_settings.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS
    known = known_window(model_id)
    cap = asked if known is None else min(asked, known.max_output_tokens)
    return OutputBounds(cap=cap, window=model_window(setup, model_id))


def output_tokens(setup: AgentSetup, model_id: str, *, messages: Sequence[Message]) -> int:
    """What a request to ``model_id`` of ``messages`` may answer with (``OutputBounds``)."""
    return output_bounds(setup, model_id).limit(setup.agent.instructions, messages)


def truncation(
    setup: AgentSetup, model_id: str, history: Sequence[Message], problem: str
) -> OutputTruncated:
    """The error of a typed answer ``model_id`` was cut off in (stop reason ``max_tokens``):
    sent back to fix, it would be cut again at the same limit."""
    limit = output_tokens(setup, model_id, messages=model_view(history))
    return OutputTruncated(
        f"{model_id}'s typed answer was cut at its output limit ({limit} tokens, stop reason "
        f"max_tokens) and does not match output_schema ({problem}): raise "
        'define_agent(model_settings={"max_output_tokens": ...}), or set '
        "model_context_window_tokens if the model's window is larger than eve assumes",
        model_id=model_id,
        max_output_tokens=limit,
    )


def compaction_policy(setup: AgentSetup) -> Policy | None:
    """When to compact: at the threshold of the smallest known window in the chain, so the
    request fits whichever model answers it; each model without one is warned about."""
    config = setup.agent.config
    windows = {client.model_id: model_window(setup, client.model_id) for client in setup.models}
    known = [tokens for tokens in windows.values() if tokens is not None]
    if config.compaction is not None and known:
        for model_id in (m for m, tokens in windows.items() if tokens is None):
            warn_unknown_window(model_id)
    first = setup.client.model_id
    return policy_for(config.compaction, model_id=first, window_tokens=min(known, default=None))


def nothing_answered(
    setup: AgentSetup,
    model_id: str,
    history: Sequence[Message],
    finish: StopReason,
    *,
    typed: bool,
) -> EmptyModelResponse | OutputTruncated:
    """The error of a response with neither text nor tool calls. Cut at the output limit
    (llama.cpp streams none of a structured answer cut before any JSON value was whole), a
    typed answer is a cut one, and an empty text says which limit to raise."""
    if finish == "max_tokens" and typed:
        return truncation(setup, model_id, history, "none of it came")
    cut = (
        ": it was cut at the output token limit before any text; raise define_agent("
        'model_settings={"max_output_tokens": ...})'
        if finish == "max_tokens"
        else ""
    )
    return EmptyModelResponse(
        f"{model_id} answered with neither text nor tool calls (finish reason {finish}); "
        f"nothing was recorded{cut}"
    )
