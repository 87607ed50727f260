"""What eve knows of each model on Amazon Bedrock: its family, what the Converse API lets it
take (cache points, a tool result's status), and how eve's ``reasoning`` levels reach it.

Bedrock serves many vendors' models behind one API (Converse), but not every field works
with every model ("Supported models and model features",
https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference-supported-models-features.html):

* **Prompt caching** (``cachePoint`` blocks; "Prompt caching",
  https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html): Claude 3.5 Haiku,
  Claude 3.7 Sonnet and every later Claude take cache points in ``system``, ``messages`` and
  ``tools``; Amazon Nova models in ``system`` and ``messages`` only. Other models refuse them.
* **Tool result status** (``ToolResultBlock.status``, API reference): "only supported by
  Amazon Nova and Anthropic Claude 3 and 4 models".
* **Reasoning** goes in ``additionalModelRequestFields``, in the vendor's own words: Claude's
  ``thinking`` (a budget, or adaptive with Converse's ``outputConfig.effort``; the table of
  ``anthropic_models`` reads Bedrock ids too) and Nova 2's ``reasoningConfig``
  ("Extended thinking" in the Amazon Nova user guide). Llama and Mistral models take none.

An id may start with a cross-region inference profile's geography (``us.``, ``eu.``,
``apac.``, ``global.`` …) or be a whole ARN; the family is read from the vendor name inside.
**Fallback**: an id eve cannot read (an application inference profile) is ``other``: no cache
points, no status, no reasoning fields, which every model accepts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from eve.manifest import ThinkingMode
from eve.models.anthropic_models import thinking_for

Family = Literal["anthropic", "nova", "llama", "mistral", "other"]

_FAMILIES: tuple[tuple[str, Family], ...] = (
    (r"(?:^|[./])anthropic\.claude", "anthropic"),
    (r"(?:^|[./])amazon\.nova", "nova"),
    (r"(?:^|[./])meta\.llama", "llama"),
    (r"(?:^|[./])mistral\.", "mistral"),
)
# Claude models before 3.5 Haiku and 3.7 Sonnet take no cache points
_UNCACHED_CLAUDE = re.compile(r"claude-(?:instant|v2|3-(?:haiku|sonnet|opus)|3-5-sonnet)")
# Nova 2 models take a reasoningConfig; Nova 1 (micro, lite, pro, premier) do not
_NOVA_REASONING = re.compile(r"amazon\.nova-2-")
#: eve's levels as Nova 2's ``maxReasoningEffort`` (low, medium, high)
NOVA_EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}


@dataclass(frozen=True, kw_only=True)
class BedrockTraits:
    """What the adapter needs to know of one model on Bedrock."""

    family: Family
    #: ``cachePoint`` blocks in ``system`` and ``messages``
    prompt_cache: bool
    #: ``cachePoint`` in ``toolConfig.tools`` too (Claude only)
    cache_tools: bool
    #: ``toolResult.status`` (``error`` for a failed tool)
    tool_result_status: bool


def family_of(model: str) -> Family:
    """The vendor family of a Bedrock model id, inference profile or ARN."""
    for pattern, family in _FAMILIES:
        if re.search(pattern, model):
            return family
    return "other"


def bedrock_traits(model: str) -> BedrockTraits:
    """The traits of ``model`` by eve's table (see the module docstring for the fallback)."""
    family = family_of(model)
    if family == "anthropic":
        cached = _UNCACHED_CLAUDE.search(model) is None
        return BedrockTraits(
            family=family, prompt_cache=cached, cache_tools=cached, tool_result_status=True
        )
    if family == "nova":
        return BedrockTraits(
            family=family, prompt_cache=True, cache_tools=False, tool_result_status=True
        )
    return BedrockTraits(
        family=family, prompt_cache=False, cache_tools=False, tool_result_status=False
    )


@dataclass(frozen=True, kw_only=True)
class BedrockReasoning:
    """The request fields for reasoning and the tokens to add to ``maxTokens`` for it."""

    #: fields of ``additionalModelRequestFields``
    fields: dict[str, Any]
    #: Converse's ``outputConfig.effort`` (adaptive Claude models)
    effort: str | None = None
    extra_tokens: int = 0


def reasoning_for(model: str, reasoning: str | None, mode: ThinkingMode) -> BedrockReasoning:
    """How ``model`` is asked for eve's ``reasoning`` level (nothing for ``None``, ``none``
    and the families that take no reasoning field)."""
    family = family_of(model)
    if reasoning is None or reasoning == "none":
        return BedrockReasoning(fields={})
    if family == "anthropic":
        if mode == "auto" and not _thinks(model):
            return BedrockReasoning(fields={})
        thinking = thinking_for(model, reasoning, mode)
        fields = {"thinking": thinking.thinking} if thinking.thinking else {}
        return BedrockReasoning(
            fields=fields, effort=thinking.effort, extra_tokens=thinking.extra_tokens
        )
    if family == "nova" and _NOVA_REASONING.search(model):
        effort = NOVA_EFFORTS.get(reasoning, "medium")
        config = {"type": "enabled", "maxReasoningEffort": effort}
        return BedrockReasoning(fields={"reasoningConfig": config})
    return BedrockReasoning(fields={})


def _thinks(model: str) -> bool:
    """Claude 3.7 Sonnet and every Claude 4 and later take extended thinking; earlier ones
    answer a ``thinking`` field with a 400 ("Extended thinking", supported models)."""
    return re.search(r"claude-(?:3-7-|(?:opus|sonnet|haiku|mythos|fable)-\d)", model) is not None
