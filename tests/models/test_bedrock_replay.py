"""Recorded real ConverseStream streams (tests/models/recorded/bedrock, see its NOTICE) framed as
the service frames them and replayed through the real ``boto3``: eve's parts, stop reasons,
usage, and the next request it sends."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eve.errors import ModelConnectionError
from eve.manifest import Retries
from eve.messages import (
    AssistantMessage,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    tool_result,
    user_message,
)
from eve.models.base import ModelRequest, ToolDeclaration
from eve.models.bedrock import bedrock_model
from eve.models.bedrock_request import request_params
from eve.models.events import Done, ModelEvent, TextDelta, TokenUsage
from tests.models.bedrock_server import BedrockServer, recorded_stream, stream
from tests.models.eventstream import event
from tests.models.gemini_server import recorded_parts

RECORDED = Path(__file__).parent / "recorded" / "bedrock"
MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.fixture
def api() -> Iterator[BedrockServer]:
    with BedrockServer() as running:
        yield running


def events_of(name: str) -> list[dict[str, Any]]:
    lines = (RECORDED / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


async def replay(api: BedrockServer, name: str) -> list[ModelEvent]:
    api.script(recorded_stream(events_of(name)))
    request = ModelRequest(system="", messages=[user_message("q")], retries=Retries(attempts=1))
    return [e async for e in bedrock_model(MODEL, api.env).stream(request)]


async def test_claude_text(api: BedrockServer) -> None:
    events = await replay(api, "bedrock-text.chunks.txt")
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text.startswith('Let me count the "r"s') and text.endswith('"strawberry."')
    assert recorded_parts(events) == [TextPart(text=text)]
    assert events[-1] == Done(
        stop_reason="end_turn", usage=TokenUsage(input_tokens=22, output_tokens=55)
    )


async def test_claude_reasoning_keeps_its_signature_for_the_next_request(
    api: BedrockServer,
) -> None:
    events = await replay(api, "bedrock-reasoning.chunks.txt")
    reasoning, answer = recorded_parts(events)
    assert isinstance(reasoning, ReasoningPart) and reasoning.provider == "bedrock"
    assert reasoning.text.startswith("Let me count the r's") and reasoning.text.endswith("3 r's.")
    recorded = (RECORDED / "bedrock-reasoning.chunks.txt").read_text(encoding="utf-8")
    assert reasoning.signature is not None and f'"signature":"{reasoning.signature}"' in recorded
    assert isinstance(answer, TextPart) and answer.text.startswith("There are **3** r's")
    history = [user_message("q"), AssistantMessage(parts=[reasoning, answer]), user_message("ok")]
    sent = request_params(MODEL, ModelRequest(system="", messages=history))["messages"]
    assert sent[1]["content"][0] == {
        "reasoningContent": {
            "reasoningText": {"text": reasoning.text, "signature": reasoning.signature}
        }
    }
    done = events[-1]
    assert isinstance(done, Done) and done.usage == TokenUsage(input_tokens=51, output_tokens=94)


async def test_kimi_tool_call_and_the_result_that_answers_it(api: BedrockServer) -> None:
    events = await replay(api, "issue-11409-kimi-k2-thinking-read-file.chunks.txt")
    text, call = recorded_parts(events)
    assert isinstance(text, TextPart) and text.text.startswith(" <think> The user wants")
    assert isinstance(call, ToolCallPart)
    assert (call.id, call.name, call.input) == (
        "functions.read_file:1",
        "read_file",
        {"target_file": "src/cursor-config.ts"},
    )
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason == "tool_use"
    assert done.usage == TokenUsage(input_tokens=260, output_tokens=116)
    declaration = ToolDeclaration(name="read_file", description="Read.", input_schema={})
    history = [
        user_message("q"),
        AssistantMessage(parts=[text, call]),
        tool_result("functions.read_file:1", "export {}", name="read_file"),
    ]
    request = ModelRequest(system="", messages=history, tools=[declaration])
    sent = request_params("moonshotai.kimi-k2-thinking", request)["messages"]
    assert sent[1]["content"][1] == {
        "toolUse": {
            "toolUseId": "functions.read_file:1",
            "name": "read_file",
            "input": {"target_file": "src/cursor-config.ts"},
        }
    }
    assert sent[2]["content"] == [
        {"toolResult": {"toolUseId": "functions.read_file:1", "content": [{"text": "export {}"}]}}
    ]


async def test_an_answer_cut_at_max_tokens(api: BedrockServer) -> None:
    events = await replay(api, "issue-17523-converse-stream.chunks.txt")
    done = events[-1]
    assert isinstance(done, Done)
    assert (done.stop_reason, done.provider_stop_reason) == ("max_tokens", "max_tokens")
    assert recorded_parts(events) == [TextPart(text="Hello! How can I assist you today? If")]


async def test_a_recorded_model_stream_error_frame(api: BedrockServer) -> None:
    raw = base64.b64decode(
        (RECORDED / "model-stream-error-exception.eventstream.base64.txt").read_text()
    )
    api.script(stream([event("messageStart", {"role": "assistant"}), raw]))
    request = ModelRequest(system="", messages=[user_message("q")], retries=Retries(attempts=1))
    with pytest.raises(ModelConnectionError, match="Model Stream Error"):
        async for _ in bedrock_model(MODEL, api.env).stream(request):
            pass
