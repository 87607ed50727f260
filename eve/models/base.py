"""The ``ModelClient`` protocol and the request it takes; the loop knows nothing else of models.

``ModelFactory`` is how a framework plugin builds clients for a provider prefix of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from eve._cancellation import CancelSignal
from eve.manifest import ModelSettings, PromptCache, Retries, ThinkingMode
from eve.messages import Message
from eve.models.events import ModelEvent

#: the tool a client without structured output is offered when the agent has an
#: ``output_schema``: its input is the final answer, and calling it ends the turn
FINAL_ANSWER_TOOL = "eve__final_answer"


@dataclass(frozen=True, kw_only=True)
class ToolDeclaration:
    """A tool as the model sees it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ProviderToolDeclaration:
    """A tool the provider runs itself (``type`` is the provider's tool type)."""

    name: str
    provider: str
    type: str
    config: dict[str, Any] = field(default_factory=dict)


#: what a request may answer with, unless ``model_settings.max_output_tokens`` says otherwise
DEFAULT_MAX_OUTPUT_TOKENS = 4096


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    system: str
    messages: list[Message]
    tools: list[ToolDeclaration] = field(default_factory=list)
    provider_tools: list[ProviderToolDeclaration] = field(default_factory=list)
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    reasoning: str | None = None
    #: how reasoning is asked for where a provider has two ways (Anthropic: adaptive or a
    #: token budget); ``auto`` leaves it to the adapter's table of models
    thinking: ThinkingMode = "auto"
    #: cache breakpoints, for providers that take them
    prompt_cache: PromptCache = field(default_factory=PromptCache)
    #: how a failure worth retrying is tried again (``model.retrying``)
    retries: Retries = field(default_factory=Retries)
    #: temperature, top_p, stop sequences, seed and provider extras, for each adapter to
    #: send as its API's parameters (``max_output_tokens`` above holds the token limit)
    settings: ModelSettings = field(default_factory=ModelSettings)
    #: the JSON Schema the final answer must match, given only to a client whose
    #: ``structured_output`` is True (it constrains the answer natively); for any other the
    #: loop offers a final-answer tool instead
    output_schema: dict[str, Any] | None = None
    signal: CancelSignal = field(default_factory=CancelSignal)
    #: the agent node asking (``__root__``, ``researcher``): providers ignore it; the
    #: offline script model picks that node's responses by it
    node_id: str = "__root__"
    #: what the request is for: a step of a turn, or writing a compaction summary (the
    #: offline models answer that one with a deterministic summary)
    purpose: Literal["turn", "compaction"] = "turn"


class ModelClient(Protocol):
    """Streams one model response as ``ModelEvent`` values, the last one ``Done``.

    A client may also have ``structured_output = True``: it honours
    ``ModelRequest.output_schema`` natively (the provider constrains the final text to that
    JSON Schema). Without the attribute the loop treats it as False.
    """

    @property
    def model_id(self) -> str: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...


class ModelFactory(Protocol):
    """Builds the client for ``<prefix>/<name>``: called with ``name`` (after the prefix).

    ``env`` is the process environment (read credentials from it, never from agent.py) and
    ``app_root`` the agent's app root, for providers that read files of their own. Import the
    provider's SDK inside the factory, so that ``eve --help`` never pays for it.
    """

    def __call__(self, name: str, *, env: Mapping[str, str], app_root: Path) -> ModelClient: ...
