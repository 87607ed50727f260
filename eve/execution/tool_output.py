"""Bounding a tool's result: what the model reads, and what the session keeps of it.

A tool may return far more than a model's window holds (a 10 MB log, a whole table). Sent
whole, it fails the request or crowds out the conversation, and each copy of it (history,
checkpoint, event log) grows the session store. So there are two caps:

- **the model's**: the tool's ``max_output_chars``, else the agent's
  ``limits.max_tool_output_chars``, else ``default_model_chars`` of the model's window. The
  text past it is left out, and a marker says how much and how to read more.
- **the store's**: the ``action.result`` event keeps the whole result (for the dev UI and the
  event log) up to ``STORE_CHARS``; a longer one is kept cut, with a note saying so.

Images and documents are not text and pass as they are.
"""

from __future__ import annotations

import msgspec

from eve.execution.compaction import window_tokens
from eve.execution.setup import AgentSetup
from eve.execution.tool_calls import CallOutcome
from eve.messages import TextPart, ToolResultPart

#: the model's cap when the agent sets none and the window is large: ~25k tokens
DEFAULT_CHARS = 100_000
#: what the event log keeps of one result
STORE_CHARS = 1_000_000


def default_model_chars(window: int | None) -> int:
    """``DEFAULT_CHARS``, or as many characters as the window has tokens when that is fewer
    (about a quarter of the window, at ~4 characters a token)."""
    return min(DEFAULT_CHARS, window) if window else DEFAULT_CHARS


def agent_output_limit(setup: AgentSetup) -> int:
    """A node's cap on what one tool result sends to its model (a tool's own comes first)."""
    config = setup.agent.config
    if config.limits.max_tool_output_chars is not None:
        return config.limits.max_tool_output_chars
    compiled = config.context_window.tokens if config.context_window is not None else None
    override = config.model_context_window_tokens
    return default_model_chars(
        window_tokens(setup.client.model_id, override=override, compiled=compiled)
    )


def model_marker(total: int, shown: int) -> str:
    return (
        f"\n[output truncated: {total:,} characters, the first {shown:,} shown. The rest is "
        "not in this conversation: to read more, call the tool again for a smaller part "
        "(a filter, a page or a range)]"
    )


def store_note(total: int, kept: int) -> str:
    return f"\n[stored truncated: {total:,} characters, the first {kept:,} kept]"


def _text_length(parts: list[ToolResultPart]) -> int:
    return sum(len(p.text) for p in parts if isinstance(p, TextPart))


def _first_chars(parts: list[ToolResultPart], limit: int) -> list[ToolResultPart]:
    """``parts`` with at most ``limit`` characters of text, in order (media parts kept)."""
    kept: list[ToolResultPart] = []
    room = limit
    for part in parts:
        if not isinstance(part, TextPart):
            kept.append(part)
        elif room > 0:
            kept.append(part if len(part.text) <= room else TextPart(text=part.text[:room]))
            room -= len(part.text)
    return kept


def cut_text(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and the store's note."""
    if len(text) <= limit:
        return text
    return text[:limit] + store_note(len(text), limit)


def bounded(result: CallOutcome, limit: int) -> CallOutcome:
    """``result`` with at most ``limit`` characters of text for the model (and the marker),
    and what the event keeps (``stored_output``: at most ``STORE_CHARS``) when it differs."""
    parts = result.result.parts
    total = _text_length(parts)
    if total <= min(limit, STORE_CHARS):
        return result
    stored = cut_text(result.result.content, STORE_CHARS)
    if total > limit:
        kept = [*_first_chars(parts, limit), TextPart(text=model_marker(total, limit))]
        result = msgspec.structs.replace(
            result, result=msgspec.structs.replace(result.result, parts=kept)
        )
    return msgspec.structs.replace(result, stored_output=stored)
