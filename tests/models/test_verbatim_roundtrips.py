"""What a provider sent comes back to it as sent (issue 32, point 5): Responses reasoning
summary parts and output order, Anthropic blocks and deltas eve does not know, and a
``tool_use`` whose input came whole in ``content_block_start``."""

from __future__ import annotations

from typing import Any

from eve.messages import AssistantMessage, ProviderPart, ReasoningPart, TextPart, ToolCallPart
from eve.models.anthropic import anthropic_messages, translate_anthropic_events
from eve.models.events import ModelEvent, PartCompleted, ToolCallDelta, ToolCallEnd, ToolCallStart
from eve.models.openai_responses import responses_input
from tests.models.anthropic_script import end, start
from tests.models.test_openai_translator import added, completed, created, responses


def done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [
        {"type": "summary_text", "text": "**Plan**\n\nLook it up."},
        {"type": "summary_text", "text": "**Answer**\n\nParis."},
    ],
    "encrypted_content": "gAAAA-opaque",
}
MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Paris.", "annotations": []}],
}


def test_reasoning_summary_parts_stay_apart_and_go_back_as_one_item() -> None:
    events = responses(created(), added(0, REASONING), done(0, REASONING), completed())
    parts = [e.part for e in events if isinstance(e, PartCompleted)]
    assert [p.text for p in parts if isinstance(p, ReasoningPart)] == [
        "**Plan**\n\nLook it up.",
        "**Answer**\n\nParis.",
    ]
    sent = responses_input([AssistantMessage(parts=list(parts))])
    assert sent == [REASONING]


def test_parts_follow_the_output_index_not_the_order_items_finish_in() -> None:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "now",
        "arguments": "{}",
        "status": "completed",
    }
    events = responses(
        created(),
        added(0, MESSAGE),
        added(1, call),
        done(1, call),  # the call finishes first
        done(0, MESSAGE),
        completed(),
    )
    ordered = [e for e in events if isinstance(e, PartCompleted | ToolCallEnd)]
    assert ordered == [
        PartCompleted(part=TextPart(text="Paris.")),
        ToolCallEnd(id="call_1", name="now", input={}),
    ]


def translate(*dicts: dict[str, Any]) -> list[ModelEvent]:
    # as the SDK builds them: by discriminator, without validation (the SDK imported here, as
    # a test needs it: every test worker imports this module as it collects)
    from anthropic._models import construct_type
    from anthropic.types import RawMessageStreamEvent

    events = (construct_type(type_=RawMessageStreamEvent, value=d) for d in dicts)
    return list(translate_anthropic_events(events))


def _block(index: int, block: dict[str, Any], *deltas: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": block},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def test_a_tool_use_with_its_input_whole_at_the_start_keeps_it() -> None:
    block = {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}}
    events = translate(start(), *_block(0, block), *end("tool_use"))
    assert events[:3] == [
        ToolCallStart(id="t1", name="add"),
        ToolCallDelta(id="t1", json_delta='{"a": 1, "b": 2}'),
        ToolCallEnd(id="t1", name="add", input={"a": 1, "b": 2}),
    ]
    message = AssistantMessage(parts=[ToolCallPart(id="t1", name="add", input={"a": 1, "b": 2})])
    assert anthropic_messages([message])[0]["content"] == [block]


def test_unknown_blocks_deltas_and_events_are_kept_and_sent_back() -> None:
    mcp = {"type": "mcp_tool_use", "id": "m1", "name": "search", "server_name": "docs", "input": {}}
    novel = {"type": "novel_block", "note": "a", "level": 1}
    events = translate(
        start(),
        *_block(0, mcp, {"type": "input_json_delta", "partial_json": '{"q": "eve"}'}),
        {"type": "brand_new_event", "anything": True},
        *_block(1, novel, {"type": "novel_delta", "note": "bc", "level": 2}),
        *end("end_turn"),
    )
    parts = [e.part for e in events if isinstance(e, PartCompleted)]
    assert not any(isinstance(e, ToolCallStart) for e in events)  # the provider ran it
    assert parts == [
        ProviderPart(
            provider="anthropic",
            block={**mcp, "input": {"q": "eve"}},
            text='[search {"q": "eve"}]',
        ),
        ProviderPart(
            provider="anthropic", block={"type": "novel_block", "note": "abc", "level": 2}
        ),
    ]
    sent = anthropic_messages([AssistantMessage(parts=list(parts))])[0]["content"]
    assert sent == [
        {**mcp, "input": {"q": "eve"}},
        {"type": "novel_block", "note": "abc", "level": 2},
    ]
