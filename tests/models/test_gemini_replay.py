"""Recorded real Gemini streams (tests/models/recorded/gemini, see its NOTICE) replayed through
the real SDK: eve's parts, stop reasons, usage, and the next request it sends."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from eve.errors import ModelRateLimited
from eve.manifest import Retries
from eve.messages import (
    AssistantMessage,
    ProviderPart,
    ReasoningPart,
    ToolCallPart,
    tool_result,
    user_message,
)
from eve.models.base import ModelRequest
from eve.models.events import Done, ModelEvent, TextDelta, TokenUsage
from eve.models.gemini_request import request_contents
from tests.models.gemini_server import recorded_parts, sse
from tests.models.sse_server import ScriptedServer, json_reply

if TYPE_CHECKING:
    from eve.models.gemini import GeminiModel

RECORDED = Path(__file__).parent / "recorded" / "gemini"
MODEL = "gemini-3-pro-preview"


def chunks(name: str) -> list[dict[str, Any]]:
    lines = (RECORDED / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def client(server: ScriptedServer) -> GeminiModel:
    # eve.models.gemini imports google.genai (~0.23 CPU-s); every xdist worker collects this
    # module, most never run it, so the SDK is imported where a test first needs it.
    from eve.models.gemini import gemini_model

    return gemini_model(
        "google", MODEL, {"GEMINI_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": server.url}
    )


async def replay(server: ScriptedServer, name: str) -> list[ModelEvent]:
    server.add(sse(chunks(name)))
    request = ModelRequest(system="", messages=[user_message("q")], retries=Retries(attempts=1))
    return [event async for event in client(server).stream(request)]


def signature_bytes(signature: str) -> bytes:
    return base64.urlsafe_b64decode(signature.replace("+", "-").replace("/", "_"))


def recorded_signature(name: str) -> bytes:
    for chunk in chunks(name):
        for part in chunk["candidates"][0]["content"]["parts"]:
            if "thoughtSignature" in part:
                return base64.b64decode(part["thoughtSignature"])
    raise AssertionError(f"{name} has no signature")


async def test_gemini_3_text_with_its_signature_on_an_empty_last_part(
    server: ScriptedServer,
) -> None:
    events = await replay(server, "google-reasoning.chunks.txt")
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text.startswith('There are **3** "r"s in strawberry.')
    (part,) = recorded_parts(events)
    # the signature closes the text it came after: one part, text and signature together
    assert isinstance(part, ProviderPart) and part.answer and part.text == text
    # kept as the API sent it: the same string, standard base64
    assert base64.b64decode(part.block["thoughtSignature"]) == recorded_signature(
        "google-reasoning.chunks.txt"
    )
    assert part.block["thoughtSignature"] in (RECORDED / "google-reasoning.chunks.txt").read_text()
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason == "end_turn"
    assert done.usage == TokenUsage(input_tokens=9, output_tokens=285, reasoning_tokens=256)
    history = [user_message("q"), AssistantMessage(parts=[part]), user_message("and?")]
    contents = request_contents("google", MODEL, ModelRequest(system="", messages=history))
    assert contents[1] == {"role": "model", "parts": [dict(part.block)]}


async def test_gemini_3_function_call_signature_goes_back_on_the_call(
    server: ScriptedServer,
) -> None:
    events = await replay(server, "google-tool-call.chunks.txt")
    held, call = recorded_parts(events)
    assert isinstance(held, ReasoningPart) and isinstance(call, ToolCallPart)
    assert held.item_id == call.id and held.text == ""
    assert (call.name, call.input) == ("weather", {"location": "San Francisco"})
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason == "tool_use"
    assert done.usage == TokenUsage(input_tokens=29, output_tokens=60, reasoning_tokens=45)
    # the next request, through the SDK: the call signed as recorded, the answer after it
    server.add(
        sse(
            [
                {
                    "candidates": [
                        {
                            "content": {"role": "model", "parts": [{"text": "ok"}]},
                            "finishReason": "STOP",
                        }
                    ]
                }
            ]
        )
    )
    history = [
        user_message("q"),
        AssistantMessage(parts=[held, call]),
        tool_result(call.id, "sunny", name="weather"),
    ]
    async for _ in client(server).stream(ModelRequest(system="", messages=history)):
        pass
    model_turn, answer = server.requests[-1].body["contents"][1:3]
    (sent_call,) = model_turn["parts"]
    assert sent_call["functionCall"] == {"name": "weather", "args": {"location": "San Francisco"}}
    assert signature_bytes(sent_call["thoughtSignature"]) == recorded_signature(
        "google-tool-call.chunks.txt"
    )
    assert answer["parts"][0]["functionResponse"]["name"] == "weather"


async def test_a_blocked_prompt_is_a_refusal(server: ScriptedServer) -> None:
    events = await replay(server, "issue-19758-prompt-block.chunks.txt")
    assert recorded_parts(events) == []
    usage = TokenUsage(input_tokens=9)
    assert events == [
        Done(stop_reason="refusal", usage=usage, provider_stop_reason="PROHIBITED_CONTENT")
    ]


async def test_a_recorded_429_waits_its_retry_info(server: ScriptedServer) -> None:
    body = json.loads((RECORDED / "google-429-retry-info.json").read_text(encoding="utf-8"))
    server.add(json_reply(429, body))
    request = ModelRequest(system="", messages=[user_message("q")], retries=Retries(attempts=1))
    with pytest.raises(ModelRateLimited, match="RESOURCE_EXHAUSTED") as limited:
        async for _ in client(server).stream(request):
            pass
    assert limited.value.retry_after == 34.4
