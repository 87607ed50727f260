"""The pure OpenAI translators over hand-built SDK objects: assembly and checks."""

from __future__ import annotations

from typing import Any, cast

import pytest
from openai._models import construct_type
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent

from eve.errors import ModelConnectionError, ModelProtocolError
from eve.models.events import (
    Done,
    ModelEvent,
    StopReason,
    TextDelta,
    TokenUsage,
    ToolCallEnd,
    ToolCallStart,
)
from eve.models.openai import translate_openai_chunks
from eve.models.openai_responses import translate_responses_events
from tests.models.openai_script import call, chunk, text, usage


def translate(*dicts: dict[str, Any]) -> list[ModelEvent]:
    return list(translate_openai_chunks(ChatCompletionChunk.model_validate(d) for d in dicts))


def test_invalid_tool_arguments_are_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match="'weather' has invalid input JSON"):
        translate(
            call(0, call_id="c", name="weather", args='{"city": Paris}'), chunk(finish="tool_calls")
        )


def test_empty_tool_arguments_are_an_empty_object() -> None:
    events = translate(call(0, call_id="c", name="now"), chunk(finish="tool_calls"))
    assert events == [
        ToolCallStart(id="c", name="now"),
        ToolCallEnd(id="c", name="now", input={}),
        Done(stop_reason="tool_use"),
    ]


def test_delta_for_an_index_without_a_name_is_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match="index 1, which has no name yet"):
        translate(call(0, call_id="c", name="now"), call(1, args="{}"))


def test_tool_calls_finish_without_calls_is_a_protocol_error() -> None:
    with pytest.raises(ModelProtocolError, match="no tool call was sent"):
        translate(text("hi"), chunk(finish="tool_calls"))


def test_a_repeated_finish_reason_keeps_the_first() -> None:
    events = translate(text("hi"), chunk(finish="length"), chunk(finish="stop"))
    assert events[-1] == Done(stop_reason="max_tokens")


def test_a_new_id_on_a_used_index_starts_a_new_call() -> None:
    events = translate(
        call(0, call_id="a", name="now", args="{}"),
        call(0, call_id="b", name="later", args='{"x": 1}'),
        chunk(finish="tool_calls"),
    )
    assert [e for e in events if isinstance(e, ToolCallEnd)] == [
        ToolCallEnd(id="a", name="now", input={}),
        ToolCallEnd(id="b", name="later", input={"x": 1}),
    ]


def test_tool_calls_with_finish_stop_are_tool_use() -> None:
    events = translate(call(0, call_id="c", name="now", args="{}"), chunk(finish="stop"))
    assert events[-1] == Done(stop_reason="tool_use")


def test_missing_finish_reason_and_done_is_a_connection_error() -> None:
    chunks = [ChatCompletionChunk.model_validate(d) for d in (text("hi"), usage(1, 1))]
    with pytest.raises(ModelConnectionError):
        list(translate_openai_chunks(chunks, done=False))


@pytest.mark.parametrize(
    ("finish", "eve_reason"),
    [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal")],
)
def test_finish_reasons_map_onto_eve(finish: str, eve_reason: StopReason) -> None:
    events = translate(text("hi"), chunk(finish=finish), usage(3, 2))
    assert events == [
        TextDelta(text="hi"),
        Done(stop_reason=eve_reason, usage=TokenUsage(input_tokens=3, output_tokens=2)),
    ]


def test_refusal_text_is_shown_and_the_stop_is_a_refusal() -> None:
    events = translate(chunk({"refusal": "I can't help with that."}), chunk(finish="stop"))
    assert events == [TextDelta(text="I can't help with that."), Done(stop_reason="refusal")]


# --- the Responses translator over hand-built SDK events ---


def created() -> dict[str, Any]:
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}
    return {"type": "response.created", "sequence_number": 0, "response": response}


def added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "response.output_item.added",
        "output_index": index,
        "item": item,
        "sequence_number": 1,
    }


def text_delta(index: int, delta: str) -> dict[str, Any]:
    return {
        "type": "response.output_text.delta",
        "output_index": index,
        "item_id": "msg_1",
        "content_index": 0,
        "delta": delta,
        "sequence_number": 2,
    }


def completed() -> dict[str, Any]:
    response = {"id": "resp_1", "object": "response", "status": "completed", "output": []}
    return {"type": "response.completed", "sequence_number": 9, "response": response}


MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "in_progress",
    "content": [],
}


def responses(*dicts: dict[str, Any]) -> list[ModelEvent]:
    # built as the SDK builds streamed events: by discriminator, without validation
    events = (
        cast(ResponseStreamEvent, construct_type(type_=ResponseStreamEvent, value=d)) for d in dicts
    )
    return list(translate_responses_events(events))


@pytest.mark.parametrize(
    ("events", "says"),
    [
        ([added(0, MESSAGE)], "before response.created"),
        ([created(), created()], "a second response.created"),
        ([created(), text_delta(0, "hi")], "which is not open"),
        ([created(), added(0, MESSAGE), added(0, MESSAGE)], "output 0 added twice"),
        ([created(), added(0, MESSAGE), completed()], "still open"),
        ([created(), completed(), completed()], "after the response ended"),
    ],
)
def test_responses_protocol_errors(events: list[dict[str, Any]], says: str) -> None:
    with pytest.raises(ModelProtocolError, match=says):
        responses(*events)


def test_an_empty_completed_response_is_end_turn_without_usage() -> None:
    assert responses(created(), completed()) == [Done(stop_reason="end_turn")]


def test_a_response_without_completion_is_a_connection_error() -> None:
    with pytest.raises(ModelConnectionError, match=r"no response\.completed"):
        responses(created(), added(0, MESSAGE), text_delta(0, "hi"))
