"""Adjacent messages of one role as one turn, for the APIs whose roles must alternate."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def merge_roles(
    pieces: Iterable[tuple[str, list[dict[str, Any]]]], *, key: str
) -> list[dict[str, Any]]:
    """``{"role": …, key: [...]}`` turns of ``(role, blocks)`` pieces in order: a piece with no
    blocks is left out, one of the same role as the turn before joins it. The results of a
    step's tool calls all sit in the one user turn after the calls (Anthropic, Gemini and
    Bedrock each require it), and a user's message after them joins that turn too."""
    turns: list[dict[str, Any]] = []
    for role, blocks in pieces:
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1][key].extend(blocks)
        else:
            turns.append({"role": role, key: blocks})
    return turns
