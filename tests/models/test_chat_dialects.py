"""The Chat Completions reader against the dialects real OpenAI-compatible servers speak
(issue 32, point 4), and a fuzz of every adapter's reader with malformed events: whatever
comes, only eve's errors come out."""

from __future__ import annotations

import contextlib
import copy
import random
from typing import Any

import pytest
from openai._models import construct_type as openai_construct
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent

from eve.errors import ModelError, ModelProtocolError
from eve.manifest import Retries
from eve.messages import AssistantMessage, ToolCallPart, tool_result, user_message
from eve.models._streaming import Translator
from eve.models.anthropic import AnthropicModel
from eve.models.base import ModelRequest
from eve.models.events import (
    Done,
    ModelEvent,
    ReasoningDelta,
    TextDelta,
    TokenUsage,
    ToolCallEnd,
    ToolCallStart,
)
from eve.models.openai import OpenAIModel
from eve.models.openai_chat import openai_messages, translate_openai_chunks
from tests.models.anthropic_script import end, start, text_block, tool_block
from tests.models.openai_script import call, chunk, text, usage
from tests.models.sse_server import ScriptedServer, openai_sse
from tests.models.test_recorded_streams import recorded

KEY = "sk-test-dialects-0123456789"


def read(*chunks: dict[str, Any]) -> list[ModelEvent]:
    # as the SDK hands them over: built without validation
    return list(
        translate_openai_chunks(
            openai_construct(type_=ChatCompletionChunk, value=c) for c in chunks
        )
    )


def test_openrouter_repeats_finish_reason_on_its_usage_chunk() -> None:
    final = {**usage(12, 3), "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    events = read(text("Hi"), chunk(finish="stop"), final)
    assert events == [
        TextDelta(text="Hi"),
        Done(stop_reason="end_turn", usage=TokenUsage(input_tokens=12, output_tokens=3)),
    ]


async def test_done_without_a_finish_reason_ends_the_answer_and_a_cut_stream_does_not() -> None:
    # Snowflake Cortex ends a complete answer with [DONE] and no finish_reason
    request = ModelRequest(system="", messages=[user_message("hi")], retries=Retries(attempts=1))
    with ScriptedServer(openai_sse([text("Hi")]), openai_sse([text("Hi")], done=False)) as server:
        client = OpenAIModel("cortex", api_key=KEY, base_url=server.url)
        events = [e async for e in client.stream(request)]
        assert events == [TextDelta(text="Hi"), Done(stop_reason="end_turn")]
        with pytest.raises(ModelError, match="no finish_reason"):
            [e async for e in client.stream(request)]


def test_gemini_tool_calls_with_empty_ids_get_ids_that_go_back_with_their_results() -> None:
    calls = [
        {"function": {"arguments": '{"city": "Paris"}', "name": "weather"}, "id": "", "type": "x"},
        {"function": {"arguments": '{"city": "Rome"}', "name": "weather"}, "id": "", "type": "x"},
    ]
    events = read(chunk({"role": "assistant", "tool_calls": calls}, finish="tool_calls"))
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [e.input for e in ends] == [{"city": "Paris"}, {"city": "Rome"}]
    assert len({e.id for e in ends}) == 2 and all(e.id.startswith("call_") for e in ends)
    assert events[-1] == Done(stop_reason="tool_use")
    parts = [ToolCallPart(id=e.id, name=e.name, input=e.input) for e in ends]
    history = [
        user_message("weather?"),
        AssistantMessage(parts=list(parts)),
        *(tool_result(p.id, "sunny", name=p.name) for p in parts),
    ]
    sent = openai_messages("", history)
    assert [c["id"] for c in sent[1]["tool_calls"]] == [p.id for p in parts]  # type: ignore[typeddict-item]
    assert [m["tool_call_id"] for m in sent[2:]] == [p.id for p in parts]  # type: ignore[typeddict-item]


def test_a_call_numbered_like_the_last_starts_anew_once_its_arguments_are_whole() -> None:
    events = read(
        call(0, name="now", args="{}"),
        call(0, name="later", args='{"x"'),
        call(0, args=": 1}"),
        chunk(finish="tool_calls"),
    )
    assert [(e.name, e.input) for e in events if isinstance(e, ToolCallEnd)] == [
        ("now", {}),
        ("later", {"x": 1}),
    ]


def test_arguments_sent_as_an_object_are_the_input() -> None:
    piece = {"index": 0, "id": "c", "function": {"name": "add", "arguments": {"a": 1}}}
    events = read(chunk({"tool_calls": [piece]}), chunk(finish="tool_calls"))
    assert ToolCallEnd(id="c", name="add", input={"a": 1}) in events


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_fields_stream_as_reasoning(field: str) -> None:
    events = read(chunk({field: "hmm"}), text("ok"), chunk(finish="stop"))
    assert events[:2] == [ReasoningDelta(text="hmm"), TextDelta(text="ok")]


def test_usage_only_chunks_and_null_choices_are_read() -> None:
    events = read(text("a"), chunk(finish="stop"), {"choices": None, "usage": None}, usage(5, 1))
    assert events[-1] == Done(
        stop_reason="end_turn", usage=TokenUsage(input_tokens=5, output_tokens=1)
    )


def test_missing_index_and_missing_id_are_the_latest_call() -> None:
    first = {"id": "c1", "function": {"name": "now", "arguments": ""}}
    rest = {"function": {"arguments": "{}"}}
    events = read(
        chunk({"tool_calls": [first]}), chunk({"tool_calls": [rest]}), chunk(finish="stop")
    )
    assert events[0] == ToolCallStart(id="c1", name="now")
    assert events[-1] == Done(stop_reason="tool_use")


def test_a_call_without_a_name_cannot_be_understood() -> None:
    with pytest.raises(ModelProtocolError, match="no name"):
        read({"choices": [{"delta": {"tool_calls": [{"id": "c"}]}}]})


# --- fuzz: malformed events into each adapter's translator ---------------------------------

_ODD: list[Any] = [None, 0, -1, 1.5, True, "", "x", [], {}, [None], {"type": 1}, "[DONE]"]


def _mutations(base: list[dict[str, Any]], rng: random.Random) -> list[Any]:
    """``base`` with one value somewhere replaced by an odd one (or an event dropped)."""
    events = copy.deepcopy(base)
    if rng.random() < 0.1 and events:
        events.pop(rng.randrange(len(events)))
        return events
    target: Any = events
    for _ in range(4):
        keys = list(range(len(target))) if isinstance(target, list) else list(target)
        if not keys:
            break
        key = rng.choice(keys)
        if rng.random() < 0.4 or not isinstance(target[key], dict | list):
            target[key] = rng.choice(_ODD)
            break
        target = target[key]
    return events


def _feed_all(translator: Translator[Any], items: list[Any]) -> None:
    for item in items:
        list(translator.feed(item))
    list(translator.finish())


def _anthropic_event(d: dict[str, Any]) -> Any:
    # the SDK imported as a test needs it: every test worker imports this module as it collects
    from anthropic._models import construct_type
    from anthropic.types import RawMessageStreamEvent

    return construct_type(type_=RawMessageStreamEvent, value=d)


def _clients() -> dict[str, tuple[Any, list[dict[str, Any]], Any]]:
    url = "http://127.0.0.1:9"
    chat = OpenAIModel("m", api_key=KEY, base_url=url, api="chat-completions")
    responses = OpenAIModel("m", api_key=KEY, base_url=url, api="responses")
    claude = AnthropicModel("claude-test", api_key=KEY, base_url=url)
    tools = [start(), *text_block(0, "hi"), *tool_block(1, "t", "now", '{"a": 1}')]
    return {
        "chat": (
            chat,
            [*recorded("mistral-thinking.chunks.jsonl"), call(0, call_id="c", name="f", args="{}")],
            lambda d: openai_construct(type_=ChatCompletionChunk, value=d),
        ),
        "responses": (
            responses,
            recorded("openai-phase.events.jsonl"),
            lambda d: openai_construct(type_=ResponseStreamEvent, value=d),
        ),
        "anthropic-tools": (
            claude,
            [*tools, *end("tool_use", 3)],
            _anthropic_event,
        ),
        "anthropic-compaction": (
            claude,
            recorded("anthropic-compaction.events.jsonl"),
            _anthropic_event,
        ),
    }


@pytest.mark.parametrize("kind", ["chat", "responses", "anthropic-tools", "anthropic-compaction"])
def test_malformed_events_raise_only_eve_errors(kind: str) -> None:
    client, base, as_sdk = _clients()[kind]
    rng = random.Random(32)
    for _ in range(100):
        items = [as_sdk(e) if isinstance(e, dict) else e for e in _mutations(base, rng)]
        # a named, redacted eve error is the one acceptable failure
        with contextlib.suppress(ModelError):
            _feed_all(client._translator(), items)
