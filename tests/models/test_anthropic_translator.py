"""The pure Anthropic translator over hand-built SDK event objects: protocol checks."""

from __future__ import annotations

from typing import Any

import pytest

from eve.errors import ModelConnectionError, ModelProtocolError
from eve.messages import ProviderPart
from eve.models.anthropic import AnthropicTranslator, translate_anthropic_events
from eve.models.events import (
    Done,
    ModelEvent,
    PartCompleted,
    StopReason,
    TextDelta,
    TokenUsage,
    ToolCallEnd,
    ToolCallStart,
)
from tests.models.anthropic_script import end, sdk_events, start, text_block, tool_block


def translate(*dicts: dict[str, Any]) -> list[ModelEvent]:
    return list(translate_anthropic_events(sdk_events(*dicts)))


def test_translator_assembles_a_tool_call_and_empty_input_is_empty_object() -> None:
    events = translate(start(), *tool_block(0, "t1", "now"), *end("tool_use", 2))
    assert events == [
        ToolCallStart(id="t1", name="now"),
        ToolCallEnd(id="t1", name="now", input={}),
        Done(stop_reason="tool_use", usage=TokenUsage(input_tokens=10, output_tokens=2)),
    ]


def test_delta_on_an_unopened_index_is_a_protocol_error() -> None:
    delta = {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "text_delta", "text": "x"},
    }
    with pytest.raises(ModelProtocolError, match="index 1, which was never started"):
        translate(start(), *text_block(0, "a"), delta)


def test_stop_for_an_unopened_index_is_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match="never started"):
        translate(start(), {"type": "content_block_stop", "index": 0})


def test_start_for_an_index_already_started_is_a_protocol_error() -> None:
    first = text_block(0, "a")[0]
    with pytest.raises(ModelProtocolError, match="already started"):
        translate(start(), first, first)


def test_out_of_order_index_is_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match="out of order"):
        translate(start(), text_block(2, "a")[0])


def test_delta_after_its_block_stopped_is_a_protocol_error() -> None:
    late = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}
    with pytest.raises(ModelProtocolError, match="already stopped"):
        translate(start(), *text_block(0, "a"), late)


def test_delta_of_the_wrong_kind_is_a_protocol_error() -> None:
    opened = tool_block(0, "t1", "now")[0]
    text = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}
    with pytest.raises(ModelProtocolError, match="tool_use block"):
        translate(start(), opened, text)


def test_unclosed_block_at_message_stop_is_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match=r"block\(s\) \[1\] still open"):
        translate(start(), *text_block(0, "a"), tool_block(1, "t1", "now")[0], *end("tool_use"))


def test_invalid_tool_json_is_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match="'weather' has invalid input JSON"):
        translate(start(), *tool_block(0, "t1", "weather", '{"city": ', "Paris}"), *end("tool_use"))


def test_tool_json_that_is_not_an_object_is_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match="not an object"):
        translate(start(), *tool_block(0, "t1", "weather", "[1, 2]"), *end("tool_use"))


def test_tool_use_stop_reason_without_tool_blocks_is_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match="no tool_use block"):
        translate(start(), *text_block(0, "a"), *end("tool_use"))


def test_tool_blocks_with_end_turn_is_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match="end_turn with 1 tool_use"):
        translate(start(), *tool_block(0, "t1", "now", "{}"), *end("end_turn"))


def test_message_stop_without_stop_reason_is_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match="without a stop_reason"):
        translate(start(), *text_block(0, "a"), {"type": "message_stop"})


def test_events_before_message_start_are_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match="before message_start"):
        translate(*text_block(0, "a"))


def test_events_after_message_stop_are_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match="after message_stop"):
        translate(start(), *text_block(0, "a"), *end("end_turn"), {"type": "message_stop"})


def test_missing_message_stop_is_a_connection_error() -> None:
    with pytest.raises(ModelConnectionError):
        translate(start(), *text_block(0, "a"), end("end_turn")[0])


@pytest.mark.parametrize(
    ("anthropic_reason", "eve_reason"),
    [
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "stop_sequence"),
        ("refusal", "refusal"),
    ],
)
def test_stop_reasons_map_onto_eve(anthropic_reason: str, eve_reason: StopReason) -> None:
    done = translate(start(), *text_block(0, "a"), *end(anthropic_reason))[-1]
    assert done == Done(stop_reason=eve_reason, usage=TokenUsage(input_tokens=10, output_tokens=5))


def test_pause_turn_is_other_to_the_translator_and_kept_as_the_api_said() -> None:
    # the adapter continues a paused response (test_anthropic_rules); the translator alone
    # only records the API's reason
    translator = AnthropicTranslator()
    events = [
        e
        for raw in sdk_events(start(), *text_block(0, "a"), *end("pause_turn"))
        for e in translator.feed(raw)
    ]
    assert events[-1] == Done(
        stop_reason="other",
        usage=TokenUsage(input_tokens=10, output_tokens=5),
        provider_stop_reason="pause_turn",
    )
    assert translator.stop_reason == "pause_turn"


def test_server_tool_blocks_reach_no_tool_call() -> None:
    server_tool = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}
    events = translate(
        start(),
        {"type": "content_block_start", "index": 0, "content_block": server_tool},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"q": 1}'},
        },
        {"type": "content_block_stop", "index": 0},
        *text_block(1, "found"),
        *end("end_turn"),
    )
    call = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"q": 1}}
    assert events[0] == PartCompleted(
        part=ProviderPart(provider="anthropic", block=call, text='[web_search {"q": 1}]')
    )
    assert events[1] == TextDelta(text="found")
    assert not any(isinstance(e, ToolCallStart | ToolCallEnd) for e in events)
