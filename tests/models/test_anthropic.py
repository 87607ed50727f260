"""The Anthropic adapter: the real SDK against a real loopback server."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from eve.errors import (
    ModelAuthError,
    ModelConnectionError,
    ModelCredentialsMissing,
    ModelHTTPError,
    ModelRateLimited,
)
from eve.manifest import Retries
from eve.messages import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCall,
    assistant_message,
    tool_result,
    user_message,
)
from eve.models.anthropic import AnthropicModel
from eve.models.base import ModelRequest, ProviderToolDeclaration, ToolDeclaration
from eve.models.events import (
    Done,
    ModelEvent,
    PartCompleted,
    ReasoningDelta,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from tests.models.anthropic_script import end, start, text_block, tool_block
from tests.models.sse_server import ScriptedServer, anthropic_sse, json_reply

KEY = "sk-ant-test-SECRET-1234567890"
#: these tests check how one failed try is reported; retrying is tests/models/test_retries.py
ONE_TRY = Retries(attempts=1)
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def model(server: ScriptedServer, key: str = KEY) -> AnthropicModel:
    return AnthropicModel("claude-test", api_key=key, base_url=server.url)


def request(**overrides: Any) -> ModelRequest:
    return ModelRequest(system="Be brief.", messages=[user_message("hi")], **overrides)


async def collect(client: AnthropicModel, req: ModelRequest | None = None) -> list[ModelEvent]:
    return [event async for event in client.stream(req or request())]


async def test_text_streams_over_several_deltas_with_usage(server: ScriptedServer) -> None:
    server.add(
        anthropic_sse(
            [start(25, cache_read=3), *text_block(0, "Hel", "lo", " world"), *end("end_turn", 7)]
        )
    )
    events = await collect(model(server))
    assert events == [
        TextDelta(text="Hel"),
        TextDelta(text="lo"),
        TextDelta(text=" world"),
        PartCompleted(part=TextPart(text="Hello world")),
        Done(
            stop_reason="end_turn",
            usage=TokenUsage(input_tokens=25, output_tokens=7, cache_read_tokens=3),
        ),
    ]
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["stream"] is True
    assert sent.body["model"] == "claude-test"


async def test_tool_input_split_across_many_deltas(server: ScriptedServer) -> None:
    pieces = ['{"ci', 'ty": "Pa', "ris", '", "days"', ": 3}"]
    server.add(
        anthropic_sse([start(), *tool_block(0, "toolu_1", "weather", *pieces), *end("tool_use")])
    )
    events = await collect(model(server))
    assert events[0] == ToolCallStart(id="toolu_1", name="weather")
    assert [e.json_delta for e in events if isinstance(e, ToolCallDelta)] == pieces
    assert events[-2] == ToolCallEnd(
        id="toolu_1", name="weather", input={"city": "Paris", "days": 3}
    )
    assert events[-1] == Done(
        stop_reason="tool_use", usage=TokenUsage(input_tokens=10, output_tokens=5)
    )


async def test_text_then_two_tool_calls_in_one_response(server: ScriptedServer) -> None:
    server.add(
        anthropic_sse(
            [
                start(),
                *text_block(0, "Checking both."),
                *tool_block(1, "toolu_a", "weather", '{"city": "Oslo"}'),
                *tool_block(2, "toolu_b", "weather", '{"city":', ' "Rome"}'),
                *end("tool_use"),
            ]
        )
    )
    events = await collect(model(server))
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert ends == [
        ToolCallEnd(id="toolu_a", name="weather", input={"city": "Oslo"}),
        ToolCallEnd(id="toolu_b", name="weather", input={"city": "Rome"}),
    ]
    assert events[0] == TextDelta(text="Checking both.")
    assert events[-1].stop_reason == "tool_use"  # type: ignore[union-attr]


async def test_request_maps_history_tools_and_reasoning(server: ScriptedServer) -> None:
    server.add(anthropic_sse([start(), *text_block(0, "ok"), *end("end_turn")]))
    history: list[Message] = [
        user_message("weather in Oslo and Rome?"),
        assistant_message(
            "Let me look.",
            tool_calls=[
                ToolCall(id="toolu_a", name="weather", input={"city": "Oslo"}),
                ToolCall(id="toolu_b", name="weather", input={"city": "Rome"}),
            ],
        ),
        tool_result("toolu_a", "sunny"),
        tool_result("toolu_b", "no such city", is_error=True),
    ]
    req = ModelRequest(
        system="Be brief.",
        messages=history,
        tools=[
            ToolDeclaration(name="weather", description="Weather by city.", input_schema=SCHEMA)
        ],
        provider_tools=[
            ProviderToolDeclaration(
                name="web_search",
                provider="anthropic",
                type="web_search_20250305",
                config={"max_uses": 2},
            ),
            ProviderToolDeclaration(name="web_search", provider="openai", type="web_search"),
        ],
        max_output_tokens=1000,
        reasoning="low",
    )
    await collect(model(server), req)
    body = server.requests[0].body
    cache = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": cache}]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "weather in Oslo and Rome?", "cache_control": cache}
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "toolu_b", "name": "weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_a",
                    "content": "sunny",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": "no such city",
                    "is_error": True,
                    "cache_control": cache,
                },
            ],
        },
    ]
    assert body["tools"] == [
        {"name": "weather", "description": "Weather by city.", "input_schema": SCHEMA},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
    ]
    # the history answers tool calls made without thinking: the API would reject thinking on
    # this request (test_anthropic_rules covers the rule), so it goes without
    assert "thinking" not in body
    assert body["max_tokens"] == 1000


async def test_no_reasoning_sends_no_thinking_and_thinking_deltas_are_reasoning(
    server: ScriptedServer,
) -> None:
    thinking = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "hmm"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig"},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    server.add(anthropic_sse([start(), *thinking, *text_block(1, "done"), *end("end_turn")]))
    events = await collect(model(server), request(max_output_tokens=500))
    assert events[:3] == [
        ReasoningDelta(text="hmm"),
        PartCompleted(part=ReasoningPart(provider="anthropic", text="hmm", signature="sig")),
        TextDelta(text="done"),
    ]
    assert "thinking" not in server.requests[0].body
    assert server.requests[0].body["max_tokens"] == 500


@pytest.mark.parametrize(
    ("status", "error_type", "expected"),
    [
        (401, "authentication_error", ModelAuthError),
        (403, "permission_error", ModelAuthError),
        (429, "rate_limit_error", ModelRateLimited),
        (500, "api_error", ModelHTTPError),
    ],
)
async def test_error_statuses_map_to_named_errors_without_the_key(
    server: ScriptedServer, status: int, error_type: str, expected: type[ModelHTTPError]
) -> None:
    echoed = {"type": "error", "error": {"type": error_type, "message": f"bad key {KEY} given"}}
    server.add(json_reply(status, echoed))
    with pytest.raises(expected) as caught:
        await collect(model(server), request(retries=ONE_TRY))
    assert type(caught.value) is expected
    assert caught.value.status == status  # type: ignore[attr-defined]
    assert KEY not in str(caught.value)
    assert error_type in str(caught.value)
    import anthropic  # the SDK loads with the tests that use it, not as every worker collects

    assert isinstance(caught.value.__cause__, anthropic.APIStatusError)


async def test_a_key_of_any_shape_is_redacted(server: ScriptedServer) -> None:
    odd_key = "plainkey-0000-secret-value"
    server.add(
        json_reply(
            401,
            {
                "type": "error",
                "error": {"type": "authentication_error", "message": f"no: {odd_key}"},
            },
        )
    )
    with pytest.raises(ModelAuthError) as caught:
        await collect(model(server, key=odd_key))
    assert odd_key not in str(caught.value)
    assert "[redacted]" in str(caught.value)


async def test_error_event_inside_the_stream_keeps_its_status(server: ScriptedServer) -> None:
    reply = anthropic_sse([start(), *text_block(0, "par")])
    reply.chunks.append(
        b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    )
    server.add(reply)
    with pytest.raises(ModelHTTPError) as caught:
        await collect(model(server), request(retries=ONE_TRY))
    assert caught.value.status == 529  # type: ignore[attr-defined]
    assert "Overloaded" in str(caught.value)


async def test_stream_cut_off_mid_block_is_a_connection_error(server: ScriptedServer) -> None:
    reply = anthropic_sse([start(), *text_block(0, "Hel", "lo")[:2]], cut=True)
    reply.chunks.append(b'event: content_block_delta\ndata: {"type": "content_bl')
    server.add(reply)
    seen: list[ModelEvent] = []
    with pytest.raises(ModelConnectionError):
        async for event in model(server).stream(request(retries=ONE_TRY)):
            seen.append(event)
    assert seen == [TextDelta(text="Hel")]


async def test_stream_ending_cleanly_without_message_stop_is_a_connection_error(
    server: ScriptedServer,
) -> None:
    server.add(anthropic_sse([start(), *text_block(0, "Hello")]))
    with pytest.raises(ModelConnectionError, match="ended before the response was complete"):
        await collect(model(server), request(retries=ONE_TRY))


async def test_unreachable_server_is_a_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = AnthropicModel("claude-test", api_key=KEY, base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(ModelConnectionError) as caught:
        await collect(client, request(retries=ONE_TRY))
    assert KEY not in str(caught.value)


async def test_cancellation_mid_stream_stops_without_done(server: ScriptedServer) -> None:
    reply = anthropic_sse([start(), *text_block(0, "one", "two", "three"), *end("end_turn")])
    reply.chunks.insert(3, 0.3)  # after the first text delta
    server.add(reply)
    req = request()
    seen: list[ModelEvent] = []

    async def consume() -> None:
        async for event in model(server).stream(req):
            seen.append(event)
            req.signal.cancel()

    await asyncio.wait_for(consume(), timeout=5)
    assert seen == [TextDelta(text="one")]


async def test_already_cancelled_request_sends_nothing(server: ScriptedServer) -> None:
    req = request()
    req.signal.cancel()
    assert await collect(model(server), req) == []
    assert server.requests == []


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelCredentialsMissing, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert AnthropicModel("claude-test").model_id == "anthropic/claude-test"
    assert KEY not in repr(AnthropicModel("claude-test"))
