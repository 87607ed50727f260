"""Content parts: the new form, the form stored before them, and the cross-provider rule."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from eve._usage import TokenUsage
from eve.errors import MessageInvalid, StepRecordCorrupt, TranscriptCorrupt
from eve.execution import load_transcript
from eve.execution.checkpoints import RanAll, StepPart
from eve.execution.response import ModelResponse
from eve.execution.tool_calls import result_parts
from eve.messages import (
    AssistantMessage,
    DocumentPart,
    ImagePart,
    Message,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
    assistant_message,
    parts_for,
    tool_result,
    user_message,
)
from eve.sessions.durable_steps import decode_step_record

PNG = b"\x89PNG\r\n\x1a\n"
#: a transcript as eve wrote it before content parts
OLD_TRANSCRIPT = b"""\
{"role":"user","text":"weather in Oslo?"}
{"role":"assistant","text":"Let me look.","tool_calls":[{"id":"c1","name":"weather","input":{"city":"Oslo"}}]}
{"role":"tool","tool_call_id":"c1","content":"sunny","is_error":false,"name":"weather"}
{"role":"assistant","text":"Sunny."}
"""


def test_a_transcript_written_before_content_parts_loads(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_bytes(OLD_TRANSCRIPT)
    user, asked, result, answer = load_transcript(path)
    assert user == user_message("weather in Oslo?")
    call = ToolCallPart(id="c1", name="weather", input={"city": "Oslo"})
    assert asked == assistant_message("Let me look.", [call])
    assert asked.tool_calls == [call] and asked.text == "Let me look."
    assert result == tool_result("c1", "sunny", name="weather")
    assert answer == assistant_message("Sunny.")


def test_an_old_message_is_written_back_in_the_new_form(tmp_path: Path) -> None:
    old = msgspec.json.decode(OLD_TRANSCRIPT.splitlines()[1], type=Message)
    encoded = msgspec.json.encode(old)
    assert b'"tool_calls"' not in encoded and b'"parts"' in encoded
    assert msgspec.json.decode(encoded, type=Message) == old


def test_a_step_record_written_before_content_parts_decodes() -> None:
    record = (
        b'{"stop":"ran-all","response":{"text":"hi","tool_calls":[],'
        b'"finish_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}}'
    )
    part = msgspec.json.decode(record, type=StepPart)
    assert isinstance(part, RanAll) and part.response is not None
    assert part.response.message() == assistant_message("hi")
    assert part.response.usage.input_tokens == 3


def test_every_part_round_trips_in_order() -> None:
    parts = [
        ReasoningPart(provider="anthropic", text="think", signature="sig"),
        TextPart(text="Searching."),
        ProviderPart(provider="anthropic", block={"type": "server_tool_use", "id": "s1"}),
        ToolCallPart(id="c1", name="t", input={}),
        ReasoningPart(provider="anthropic", redacted=True, payload="opaque"),
    ]
    message = AssistantMessage(parts=parts)
    again = msgspec.json.decode(msgspec.json.encode(message), type=Message)
    assert again == message and again.parts == parts
    user = UserMessage(
        parts=[
            TextPart(text="what is this?"),
            ImagePart(media_type="image/png", data=PNG),
            DocumentPart(media_type="application/pdf", url="https://example.com/a.pdf"),
        ]
    )
    assert msgspec.json.decode(msgspec.json.encode(user), type=Message) == user


def test_a_malformed_part_in_a_transcript_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"role":"user","parts":[{"type":"text","text":"hi"}]}\n'
        '{"role":"user","parts":[{"type":"image","media_type":"image/png"}]}\n'
    )
    with pytest.raises(TranscriptCorrupt) as caught:
        load_transcript(path)
    assert caught.value.line == 2
    assert "$.parts[0]" in str(caught.value) and "exactly one of `data` and `url`" in str(
        caught.value
    )


def test_a_part_of_an_unknown_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"role":"user","parts":[{"type":"hologram","data":"x"}]}\n')
    with pytest.raises(TranscriptCorrupt, match="hologram"):
        load_transcript(path)


def test_media_needs_exactly_one_source() -> None:
    with pytest.raises(MessageInvalid, match="exactly one"):
        ImagePart(media_type="image/png")
    with pytest.raises(MessageInvalid, match="exactly one"):
        ImagePart(media_type="image/png", data=PNG, url="https://example.com/x.png")


def test_another_providers_reasoning_is_dropped_and_its_blocks_become_text() -> None:
    parts = [
        ReasoningPart(provider="openai", payload="enc", item_id="rs_1"),
        ReasoningPart(provider="anthropic", text="t", signature="s"),
        ProviderPart(provider="openai", block={"type": "web_search_call"}, text=""),
        ProviderPart(provider="openai", block={"type": "message", "annotations": []}, text="cited"),
        TextPart(text="answer"),
        ToolCallPart(id="c", name="t", input={}),
    ]
    assert parts_for("anthropic", parts) == [
        ReasoningPart(provider="anthropic", text="t", signature="s"),
        TextPart(text="cited"),
        TextPart(text="answer"),
        ToolCallPart(id="c", name="t", input={}),
    ]
    assert parts_for("openai", parts) == [
        parts[0],
        parts[2],
        parts[3],
        TextPart(text="answer"),
        ToolCallPart(id="c", name="t", input={}),
    ]


def test_a_tool_returning_an_image_gives_an_image_part() -> None:
    image = ImagePart(media_type="image/png", data=PNG)
    assert result_parts(image) == [image]
    assert result_parts(["a chart:", image]) == [TextPart(text="a chart:"), image]
    assert result_parts({"n": 1}) == [TextPart(text='{"n":1}')]
    assert result_parts(["a", "b"]) == [TextPart(text='["a","b"]')]
    result = ToolResultMessage(tool_call_id="c", parts=result_parts(["chart", image]))
    assert result.content == "chart" and result.media == [image]


def test_a_model_response_is_the_message_it_records() -> None:
    response = ModelResponse(
        parts=[TextPart(text="a"), ToolCallPart(id="c", name="t", input={})],
        finish_reason="tool_use",
        usage=TokenUsage(input_tokens=1),
    )
    assert response.message() == AssistantMessage(parts=response.parts)
    assert response.text == "a" and [c.id for c in response.tool_calls] == ["c"]


def test_cited_text_counts_in_the_answer_and_a_blocks_description_does_not() -> None:
    cited = ProviderPart(
        provider="anthropic",
        block={"type": "text", "text": "Oslo is sunny.", "citations": []},
        text="Oslo is sunny.",
        answer=True,
    )
    found = ProviderPart(
        provider="anthropic",
        block={"type": "web_search_tool_result", "content": []},
        text="Weather (https://example.com)",
    )
    message = AssistantMessage(parts=[found, TextPart(text="Today: "), cited])
    assert message.text == "Today: Oslo is sunny."


def test_a_step_record_with_a_malformed_part_names_the_turn_and_the_step() -> None:
    bad = b'{"stop":"ran-all","response":{"parts":[{"type":"image","media_type":"image/png"}],'
    bad += b'"finish_reason":"end_turn","usage":{}}}'
    record = b'{"value":' + bad + b',"state":{},"approved_once":[],"attempt":0,"events":[]}'
    with pytest.raises(StepRecordCorrupt) as caught:
        decode_step_record(
            record, msgspec.json.Decoder(StepPart), workflow_id="ses_1:turn-3", step="step:2"
        )
    assert (caught.value.workflow_id, caught.value.step) == ("ses_1:turn-3", "step:2")
    assert "$.response.parts[0]" in str(caught.value) and "reset the session" in str(caught.value)
