"""What eve knows of each Claude model: how it takes reasoning, and whether it has native
structured output; and how eve's ``reasoning`` levels map onto either kind of thinking.

Claude models take extended thinking in one of two ways (Anthropic, "Adaptive thinking",
https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking, and "Extended
thinking", https://platform.claude.com/docs/en/build-with-claude/extended-thinking):

* **budget**: ``thinking: {type: "enabled", budget_tokens: N}``; every model before Claude
  Opus 4.6 / Sonnet 4.6 takes only this.
* **adaptive**: ``thinking: {type: "adaptive"}`` with ``output_config.effort``; Claude Opus 4.6
  and Sonnet 4.6 take both (``enabled`` is deprecated there); Claude Opus 4.7, the Mythos
  models and every later model take only this and answer ``enabled`` with a 400.

The table is by model family and version, read from the id (``claude-opus-4-7``,
``claude-sonnet-4-5-20250929``, ``claude-3-7-sonnet-latest``, Bedrock's
``anthropic.claude-opus-4-7``). **Fallback**: an id eve cannot read (a gateway alias, a test
name) is taken as a budget model, and a model of a version newer than any below as
adaptive-only. ``define_agent(thinking="adaptive" | "budget")`` overrides the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from eve.manifest import ThinkingMode

#: how a model takes reasoning
ThinkingKind = Literal["budget", "adaptive"]

# eve's levels as a thinking budget: thinking tokens count toward max_tokens, so the budget
# is also added on top of the output limit (1,024 is the API's minimum budget).
BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}

# eve's levels as an adaptive model's effort ("Effort",
# https://platform.claude.com/docs/en/build-with-claude/effort): low, medium, high, max.
EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "max"}

_NEW_STYLE = re.compile(r"claude-(opus|sonnet|haiku|mythos|fable)-(\d+)(?:-(\d{1,2}))?(?!\d)")
_OLD_STYLE = re.compile(r"claude-(\d+)(?:-(\d{1,2}))?-(opus|sonnet|haiku)")


@dataclass(frozen=True, kw_only=True)
class ModelTraits:
    """What the adapter needs to know of one Claude model."""

    #: it takes ``thinking: {type: "adaptive"}``
    adaptive: bool
    #: it takes ``thinking: {type: "enabled", budget_tokens: ...}``
    budget: bool
    #: it constrains its answer to ``output_config.format`` (Anthropic, "Structured
    #: outputs", https://platform.claude.com/docs/en/build-with-claude/structured-outputs:
    #: generally available from the 4.5 models on)
    structured_output: bool
    #: the shortest prefix it caches, in tokens (Anthropic, "Prompt caching",
    #: https://platform.claude.com/docs/en/build-with-claude/prompt-caching)
    min_cacheable_tokens: int


_UNKNOWN = ModelTraits(
    adaptive=False, budget=True, structured_output=False, min_cacheable_tokens=1024
)


def _version(model: str) -> tuple[str, int, int] | None:
    if found := _NEW_STYLE.search(model):
        return found.group(1), int(found.group(2)), int(found.group(3) or 0)
    if found := _OLD_STYLE.search(model):
        return found.group(3), int(found.group(1)), int(found.group(2) or 0)
    return None


def model_traits(model: str) -> ModelTraits:
    """The traits of ``model`` by eve's table (see the module docstring for the fallback)."""
    version = _version(model)
    if version is None and re.search(r"claude-(mythos|fable)", model):
        version = ("mythos", 0, 0)  # a preview without a version number
    if version is None:
        return _UNKNOWN
    family, major, minor = version
    number = (major, minor)
    adaptive_only = family in ("mythos", "fable") or number >= (5, 0)
    adaptive_only = adaptive_only or (family == "opus" and number >= (4, 7))
    adaptive = adaptive_only or number >= (4, 6)
    minimum = 1024
    if (family, number) in (("opus", (4, 5)), ("opus", (4, 6)), ("haiku", (4, 5))):
        minimum = 4096
    elif family == "haiku" or (family, number) in (("sonnet", (4, 6)), ("opus", (4, 7))):
        minimum = 2048
    return ModelTraits(
        adaptive=adaptive,
        budget=not adaptive_only,
        structured_output=number >= (4, 5) and family != "mythos",
        min_cacheable_tokens=minimum,
    )


def thinking_kind(model: str, mode: ThinkingMode) -> ThinkingKind:
    """How ``model`` is asked to reason: ``mode`` when forced, else by the table (a model
    that takes both gets adaptive, which Anthropic recommends there)."""
    if mode != "auto":
        return mode
    return "adaptive" if model_traits(model).adaptive else "budget"


@dataclass(frozen=True, kw_only=True)
class Thinking:
    """The request fields for reasoning: what goes in ``thinking`` and ``output_config`` and
    how many tokens to add to ``max_tokens``."""

    thinking: dict[str, Any] | None = None
    effort: str | None = None
    extra_tokens: int = 0


def thinking_for(model: str, reasoning: str | None, mode: ThinkingMode) -> Thinking:
    """The thinking fields for eve's ``reasoning`` level (``None`` and ``none``: no thinking,
    the field left out, which every model accepts)."""
    if reasoning is None or reasoning == "none":
        return Thinking()
    budget = BUDGETS.get(reasoning, BUDGETS["medium"])
    if thinking_kind(model, mode) == "adaptive":
        # adaptive thinking still counts toward max_tokens: the level's budget is headroom
        effort = EFFORTS.get(reasoning, "medium")
        return Thinking(thinking={"type": "adaptive"}, effort=effort, extra_tokens=budget)
    return Thinking(thinking={"type": "enabled", "budget_tokens": budget}, extra_tokens=budget)
