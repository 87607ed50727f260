"""Context trimming: keep the newest history within a token budget, tool pairs intact."""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from eve.messages import Message, ProviderPart, TextPart, ToolCallPart, ToolResultMessage


class _Estimate(weakref.ref):  # type: ignore[type-arg]
    """A message's estimate, held by a weak reference to it: one object per message."""

    __slots__ = ("key", "tokens")
    key: int
    tokens: int


#: id(message) → its estimate. Each step's request re-measures every message before it (the
#: output limit against the window, the compaction threshold, the trim budget), so without
#: this a turn of n steps estimated O(n²) messages. Messages are frozen, so an estimate
#: holds while the message lives; its entry goes when it does.
_estimates: dict[int, _Estimate] = {}


def _forget(estimate: _Estimate) -> None:
    # an id is reused once its message is gone: the entry may be a newer message's already
    if _estimates.get(estimate.key) is estimate:
        del _estimates[estimate.key]


def estimate_tokens(message: Message) -> int:
    """A provider-neutral estimate (about four characters a token), good enough for budgets."""
    key = id(message)
    known = _estimates.get(key)
    if known is not None and known() is message:
        return known.tokens
    estimate = _estimates[key] = _Estimate(message, _forget)
    estimate.key, estimate.tokens = key, _measure(message)
    return estimate.tokens


def _measure(message: Message) -> int:
    # the characters the model reads: the message's text (its text parts and a provider's
    # answer text, as ``text``/``content`` join them) and each tool call's name and input
    size = 0
    for part in message.parts:
        if isinstance(part, TextPart) or (isinstance(part, ProviderPart) and part.answer):
            size += len(part.text)
        elif isinstance(part, ToolCallPart):
            size += len(part.name) + len(str(part.input))
    return size // 4 + 4


def units(messages: Sequence[Message]) -> list[list[Message]]:
    """Group an assistant message with the tool results that answer it."""
    units: list[list[Message]] = []
    for message in messages:
        if isinstance(message, ToolResultMessage) and units:
            units[-1].append(message)
        else:
            units.append([message])
    return units


def trim_history(messages: Sequence[Message], budget_tokens: int | None) -> list[Message]:
    """The longest suffix of whole units that fits ``budget_tokens``; never splits a tool call
    from its result, never drops the newest unit, and never starts with orphaned results."""
    if budget_tokens is None:
        return list(messages)
    kept: list[list[Message]] = []
    used = 0
    for unit in reversed(units(messages)):
        cost = sum(estimate_tokens(m) for m in unit)
        if kept and used + cost > budget_tokens:
            break
        kept.append(unit)
        used += cost
    out = [m for unit in reversed(kept) for m in unit]
    while out and isinstance(out[0], ToolResultMessage):
        out.pop(0)
    return out
