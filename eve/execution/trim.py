"""Context trimming: keep the newest history within a token budget, tool pairs intact."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from functools import partial

from eve.messages import Message, ProviderPart, TextPart, ToolCallPart, ToolResultMessage

#: id(message) → a weak reference to it and its estimate. Each step's request re-measures
#: every message before it (the output limit against the window, the compaction threshold,
#: the trim budget), so without this a turn of n steps estimated O(n²) messages. Messages are
#: frozen, so an estimate holds while the message lives; its entry goes when it does.
_estimates: dict[int, tuple[weakref.ref[Message], int]] = {}


def _forget(key: int, _: object) -> None:
    _estimates.pop(key, None)


def estimate_tokens(message: Message) -> int:
    """A provider-neutral estimate (about four characters a token), good enough for budgets."""
    key = id(message)
    known = _estimates.get(key)
    # the identity check: an id is reused once its message is gone
    if known is not None and known[0]() is message:
        return known[1]
    tokens = _measure(message)
    _estimates[key] = (weakref.ref(message, partial(_forget, key)), tokens)
    return tokens


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
