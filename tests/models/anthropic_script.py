"""Messages API stream events as the server sends them, and as SDK event objects."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anthropic import types as sdk


def start(input_tokens: int = 10, cache_read: int = 0) -> dict[str, Any]:
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": 1,
        "cache_read_input_tokens": cache_read,
    }
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        },
    }


def text_block(index: int, *pieces: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        },
        *(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": p},
            }
            for p in pieces
        ),
        {"type": "content_block_stop", "index": index},
    ]


def tool_block(index: int, call_id: str, name: str, *pieces: str) -> list[dict[str, Any]]:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return [
        {"type": "content_block_start", "index": index, "content_block": block},
        *(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in pieces
        ),
        {"type": "content_block_stop", "index": index},
    ]


def end(stop_reason: str, output_tokens: int = 5) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def sdk_events(*dicts: dict[str, Any]) -> list[sdk.RawMessageStreamEvent]:
    # imported here, not with the module: every test worker imports this module as it
    # collects, and the SDK's types cost over a second of CPU (only some workers build events)
    from anthropic import types as sdk

    event_types: dict[str, Any] = {
        "message_start": sdk.RawMessageStartEvent,
        "content_block_start": sdk.RawContentBlockStartEvent,
        "content_block_delta": sdk.RawContentBlockDeltaEvent,
        "content_block_stop": sdk.RawContentBlockStopEvent,
        "message_delta": sdk.RawMessageDeltaEvent,
        "message_stop": sdk.RawMessageStopEvent,
    }
    return [event_types[d["type"]].model_validate(d) for d in dicts]
