"""What eve knows of each Gemini model: how it takes thinking, whether it constrains its answer
to a JSON Schema, and how eve's ``reasoning`` levels become a ``thinkingConfig``.

Gemini models take thinking in one of two ways (Google, "Gemini thinking",
https://ai.google.dev/gemini-api/docs/thinking):

* **level** (``thinkingLevel``): Gemini 3 and later. Pro models take ``low`` and ``high``;
  Flash models also ``minimal`` and ``medium``. Thinking cannot be turned off.
* **budget** (``thinkingBudget``, in tokens): Gemini 2.5. Pro takes 128 to 32,768 and cannot
  turn thinking off; Flash takes 0 (off) to 24,576; Flash-Lite 512 to 24,576, or 0.

Models before 2.5 do not think and get no ``thinkingConfig`` (the API refuses one). The table
reads the id (``gemini-2.5-flash``, ``gemini-3-pro-preview``, Vertex's
``publishers/google/models/gemini-2.5-pro``). **Fallback**: an id eve cannot read (a tuned
model, a test name) is taken as the newest kind, a level model with Flash's levels.
``define_agent(thinking="adaptive" | "budget")`` forces a level or a budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from eve.manifest import ThinkingMode

#: how a model takes thinking: a level, a token budget, or not at all
GeminiThinking = Literal["level", "budget", "none"]

_ID = re.compile(r"gemini-(\d+)(?:\.(\d+))?-(pro|flash-lite|flash)")

# eve's levels as a 2.5 model's budget, before the model's own bounds are applied
BUDGETS = {"minimal": 512, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}
#: the most output tokens a thinking Gemini model takes ("Gemini models": 65,536)
MAX_OUTPUT_TOKENS = 65_536


@dataclass(frozen=True, kw_only=True)
class GeminiTraits:
    """What the adapter needs to know of one Gemini model."""

    thinking: GeminiThinking
    #: the levels it takes, lowest first (level models)
    levels: tuple[str, ...] = ("minimal", "low", "medium", "high")
    #: the smallest and largest budget it takes (budget models)
    budget_range: tuple[int, int] = (0, 24576)
    #: it can think not at all (budget 0)
    can_turn_off: bool = True
    #: ``responseJsonSchema`` together with function calling (Google, "Structured output",
    #: https://ai.google.dev/gemini-api/docs/structured-output: "Gemini 3 ... structured
    #: outputs with tools"); earlier models get eve's final-answer tool instead
    structured_output: bool = True


_UNKNOWN = GeminiTraits(thinking="level", can_turn_off=False)


def gemini_traits(model: str) -> GeminiTraits:
    """The traits of ``model`` by eve's table (see the module docstring for the fallback)."""
    found = _ID.search(model)
    if found is None:
        return _UNKNOWN
    version = (int(found.group(1)), int(found.group(2) or 0))
    family = found.group(3)
    if version >= (3, 0):
        levels = ("low", "high") if family == "pro" else _UNKNOWN.levels
        return GeminiTraits(thinking="level", levels=levels, can_turn_off=False)
    if version >= (2, 5):
        bounds = {"pro": (128, 32768), "flash": (0, 24576), "flash-lite": (512, 24576)}[family]
        return GeminiTraits(
            thinking="budget",
            budget_range=bounds,
            can_turn_off=family != "pro",
            structured_output=False,
        )
    return GeminiTraits(thinking="none", can_turn_off=True, structured_output=False)


def _level(reasoning: str, levels: tuple[str, ...]) -> str:
    wanted = {"xhigh": "high"}.get(reasoning, reasoning)
    if wanted in levels:
        return wanted
    # the nearest level the model has, rounding up (a Pro model asked for "medium" thinks
    # "high": less thinking than asked for would be a silent downgrade)
    order = ("minimal", "low", "medium", "high")
    above = [level for level in levels if order.index(level) >= order.index(wanted)]
    return above[0] if above else levels[-1]


def thinking_config(model: str, reasoning: str | None, mode: ThinkingMode) -> dict[str, Any]:
    """The ``thinkingConfig`` for eve's ``reasoning`` level; empty when the request should
    carry none (``reasoning`` unset: the model's default)."""
    traits = gemini_traits(model)
    if reasoning is None or (traits.thinking == "none" and mode == "auto"):
        return {}
    kind = {"adaptive": "level", "budget": "budget"}.get(mode, traits.thinking)
    if reasoning == "none":
        if traits.can_turn_off or kind == "budget":
            low = 0 if traits.can_turn_off else traits.budget_range[0]
            return {"thinkingBudget": low}
        return {"thinkingLevel": traits.levels[0]}
    if kind == "level":
        return {"thinkingLevel": _level(reasoning, traits.levels), "includeThoughts": True}
    low, high = traits.budget_range
    budget = min(max(BUDGETS.get(reasoning, BUDGETS["medium"]), low, 1), high)
    return {"thinkingBudget": budget, "includeThoughts": True}


def max_output_tokens(model: str, asked: int, reasoning: str | None) -> int:
    """``maxOutputTokens`` for an answer of ``asked`` tokens: a thinking model's thoughts
    count toward the limit ("Gemini thinking", "Pricing": thinking tokens are output), so
    the level's budget is added on top (without a level, the model thinks as it likes by
    default: medium's budget), up to the models' maximum."""
    if gemini_traits(model).thinking == "none" or reasoning == "none":
        return asked
    headroom = BUDGETS.get(reasoning or "medium", BUDGETS["medium"])
    return max(asked, min(asked + headroom, MAX_OUTPUT_TOKENS))
