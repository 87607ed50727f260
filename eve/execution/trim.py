"""Context trimming: keep the newest history within a token budget, tool pairs intact."""

from __future__ import annotations

from collections.abc import Sequence

from eve.messages import AssistantMessage, Message, ToolResultMessage, UserMessage


def estimate_tokens(message: Message) -> int:
    """A provider-neutral estimate (about four characters a token), good enough for budgets."""
    match message:
        case UserMessage(text=text):
            size = len(text)
        case AssistantMessage(text=text, tool_calls=calls):
            size = len(text) + sum(len(c.name) + len(str(c.input)) for c in calls)
        case ToolResultMessage(content=content):
            size = len(content)
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
