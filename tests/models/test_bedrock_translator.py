"""The ConverseStream translator on its own: what a stream that breaks the protocol becomes."""

from __future__ import annotations

from typing import Any

import pytest

from eve.errors import ModelConnectionError, ModelProtocolError
from eve.models._guarded import GuardedTranslator
from eve.models.bedrock_stream import BedrockTranslator, translate_bedrock_events
from eve.models.events import Done, ToolCallEnd

STOP = {"messageStop": {"stopReason": "tool_use"}}


def _start(index: int, call_id: str = "t1", name: str = "weather") -> dict[str, Any]:
    start = {"toolUse": {"toolUseId": call_id, "name": name}}
    return {"contentBlockStart": {"contentBlockIndex": index, "start": start}}


def _input(index: int, text: str) -> dict[str, Any]:
    delta = {"toolUse": {"input": text}}
    return {"contentBlockDelta": {"contentBlockIndex": index, "delta": delta}}


def _stop(index: int) -> dict[str, Any]:
    return {"contentBlockStop": {"contentBlockIndex": index}}


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        ([_start(0), _input(0, '{"city": '), _stop(0), STOP], "invalid input JSON"),
        ([_start(0), _input(0, "[1]"), _stop(0), STOP], "not an object"),
        ([_input(0, "{}"), STOP], "not a tool use"),
        ([_start(0), _start(0), STOP], "started twice"),
        ([{"contentBlockDelta": {"delta": {"text": "x"}}}, STOP], "no index"),
        ([_start(0, call_id=""), STOP], "no id or no name"),
    ],
    ids=["bad-json", "not-object", "input-without-start", "started-twice", "no-index", "no-id"],
)
def test_a_broken_stream_is_a_protocol_error(events: list[dict[str, Any]], problem: str) -> None:
    with pytest.raises(ModelProtocolError, match=problem):
        list(translate_bedrock_events(events))


def test_a_value_of_the_wrong_type_is_a_protocol_error_not_a_type_error() -> None:
    translator = GuardedTranslator("bedrock", BedrockTranslator())
    with pytest.raises(ModelProtocolError, match="cannot read"):
        translator.feed({"metadata": {"usage": {"inputTokens": "many"}}})


def test_a_stream_without_message_stop_was_cut() -> None:
    with pytest.raises(ModelConnectionError, match="no messageStop"):
        list(translate_bedrock_events([_start(0), _input(0, "{}"), _stop(0)]))


def test_an_unclosed_call_is_completed_and_end_turn_with_calls_is_tool_use() -> None:
    events = list(
        translate_bedrock_events(
            [_start(0), _input(0, '{"city": "Oslo"}'), {"messageStop": {"stopReason": "end_turn"}}]
        )
    )
    assert events[-2] == ToolCallEnd(id="t1", name="weather", input={"city": "Oslo"})
    assert isinstance(events[-1], Done) and events[-1].stop_reason == "tool_use"
