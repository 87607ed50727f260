"""Chat Completions stream chunks as the server sends them."""

from __future__ import annotations

from typing import Any


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [choice],
    }


def text(piece: str) -> dict[str, Any]:
    return chunk({"content": piece})


def call(
    index: int, *, call_id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    function = {k: v for k, v in (("name", name), ("arguments", args)) if v is not None}
    tool_call: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        tool_call.update(id=call_id, type="function")
    return chunk({"tool_calls": [tool_call]})


def usage(prompt: int, completion: int) -> dict[str, Any]:
    counts = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [],
        "usage": counts,
    }
