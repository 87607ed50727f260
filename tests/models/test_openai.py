"""The OpenAI client and its Chat Completions adapter: the real SDK against loopback servers."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
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
    AssistantMessage,
    DocumentPart,
    ImagePart,
    Message,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCall,
    assistant_message,
    tool_result,
    user_message,
)
from eve.models.base import ModelRequest, ProviderToolDeclaration, ToolDeclaration
from eve.models.events import (
    Done,
    ModelEvent,
    ReasoningDelta,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from eve.models.openai import OpenAIModel, choose_api, is_official
from eve.models.registry import create_client
from tests.models.openai_script import call, chunk, text, usage
from tests.models.openai_server import OpenAIServer, Said, Turn
from tests.models.sse_server import ScriptedServer, json_reply, openai_sse

KEY = "sk-test-SECRET-1234567890"
#: these tests check how one failed try is reported; retrying is tests/models/test_retries.py
ONE_TRY = Retries(attempts=1)
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def model(server: ScriptedServer, key: str | None = KEY) -> OpenAIModel:
    return OpenAIModel("gpt-test", api_key=key, base_url=f"{server.url}/v1")


def request(**overrides: Any) -> ModelRequest:
    fields: dict[str, Any] = {"messages": [user_message("hi")], **overrides}
    return ModelRequest(system="Be brief.", **fields)


async def collect(client: OpenAIModel, req: ModelRequest | None = None) -> list[ModelEvent]:
    return [event async for event in client.stream(req or request())]


async def test_text_streams_over_several_chunks_with_usage(server: ScriptedServer) -> None:
    server.add(
        openai_sse(
            [
                chunk({"role": "assistant"}),
                text("Hel"),
                text("lo"),
                text(" world"),
                chunk(finish="stop"),
                usage(21, 4),
            ]
        )
    )
    events = await collect(model(server))
    assert events == [
        TextDelta(text="Hel"),
        TextDelta(text="lo"),
        TextDelta(text=" world"),
        Done(stop_reason="end_turn", usage=TokenUsage(input_tokens=21, output_tokens=4)),
    ]
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}


async def test_tool_arguments_split_across_many_chunks(server: ScriptedServer) -> None:
    pieces = ['{"ci', 'ty": "Pa', "ris", '", "days"', ": 3}"]
    script = [
        call(0, call_id="call_1", name="weather"),
        *(call(0, args=p) for p in pieces),
        chunk(finish="tool_calls"),
        usage(9, 12),
    ]
    server.add(openai_sse(script))
    events = await collect(model(server))
    assert events[0] == ToolCallStart(id="call_1", name="weather")
    assert [e.json_delta for e in events if isinstance(e, ToolCallDelta)] == pieces
    assert events[-2:] == [
        ToolCallEnd(id="call_1", name="weather", input={"city": "Paris", "days": 3}),
        Done(stop_reason="tool_use", usage=TokenUsage(input_tokens=9, output_tokens=12)),
    ]


async def test_two_tool_calls_assembled_by_index(server: ScriptedServer) -> None:
    script = [
        call(0, call_id="call_a", name="weather", args='{"city":'),
        call(1, call_id="call_b", name="weather", args='{"city": "Rome"'),
        call(0, args=' "Oslo"}'),
        call(1, args="}"),
        chunk(finish="tool_calls"),
    ]
    server.add(openai_sse(script))
    events = await collect(model(server))
    assert [e for e in events if isinstance(e, ToolCallEnd)] == [
        ToolCallEnd(id="call_a", name="weather", input={"city": "Oslo"}),
        ToolCallEnd(id="call_b", name="weather", input={"city": "Rome"}),
    ]
    assert events[-1] == Done(stop_reason="tool_use")


async def test_request_maps_history_and_tools(server: ScriptedServer) -> None:
    server.add(openai_sse([text("ok"), chunk(finish="stop")]))
    history: list[Message] = [
        user_message("weather in Oslo and Rome?"),
        assistant_message(
            tool_calls=[
                ToolCall(id="call_a", name="weather", input={"city": "Oslo"}),
                ToolCall(id="call_b", name="weather", input={"city": "Rome"}),
            ]
        ),
        tool_result("call_a", "sunny"),
        tool_result("call_b", "no such city", is_error=True),
        assistant_message("Oslo is sunny."),
        user_message("thanks"),
    ]
    req = ModelRequest(
        system="Be brief.",
        messages=history,
        tools=[
            ToolDeclaration(name="weather", description="Weather by city.", input_schema=SCHEMA)
        ],
        provider_tools=[
            ProviderToolDeclaration(name="web_search", provider="openai", type="web_search")
        ],
        max_output_tokens=700,
        reasoning="high",
    )
    await collect(model(server), req)
    body = server.requests[0].body
    calls = body["messages"][2].pop("tool_calls")
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "weather in Oslo and Rome?"},
        {"role": "assistant", "content": None},
        {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: no such city"},
        {"role": "assistant", "content": "Oslo is sunny."},
        {"role": "user", "content": "thanks"},
    ]
    assert [
        (c["id"], c["type"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in calls
    ] == [
        ("call_a", "function", "weather", {"city": "Oslo"}),
        ("call_b", "function", "weather", {"city": "Rome"}),
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Weather by city.",
                "parameters": SCHEMA,
            },
        }
    ]
    # A compatible server gets the long-standing max_tokens; reasoning passes through.
    assert body["max_tokens"] == 700
    assert "max_completion_tokens" not in body
    assert body["reasoning_effort"] == "high"


def test_only_the_official_host_counts_as_official() -> None:
    assert is_official(None)
    assert is_official("https://api.openai.com/v1")
    assert not is_official("http://127.0.0.1:8080/v1")
    assert not is_official("https://api.openai.com.example.net/v1")


async def test_reasoning_from_a_compatible_server_is_reasoning(server: ScriptedServer) -> None:
    server.add(
        openai_sse([chunk({"reasoning_content": "thinking..."}), text("42"), chunk(finish="stop")])
    )
    events = await collect(model(server))
    assert events[:2] == [ReasoningDelta(text="thinking..."), TextDelta(text="42")]
    assert "reasoning_effort" not in server.requests[0].body


async def test_compatible_server_needs_no_key(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.add(openai_sse([text("hi"), chunk(finish="stop")]))
    events = await collect(model(server, key=None))
    assert events[0] == TextDelta(text="hi")
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


async def test_base_url_comes_from_the_environment(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/compat/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server.add(openai_sse([text("hi"), chunk(finish="stop")]))
    await collect(OpenAIModel("local-model"))
    assert server.requests[0].path == "/compat/v1/chat/completions"
    assert server.requests[0].body["model"] == "local-model"


def test_official_server_without_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelCredentialsMissing, match="OPENAI_API_KEY"):
        OpenAIModel("gpt-test")
    with pytest.raises(ModelCredentialsMissing):
        OpenAIModel("gpt-test", base_url="https://api.openai.com/v1")


@pytest.mark.parametrize(
    ("status", "expected"),
    [(401, ModelAuthError), (403, ModelAuthError), (429, ModelRateLimited), (500, ModelHTTPError)],
)
@pytest.mark.parametrize("key", [KEY, "local-key-without-a-known-shape"])
async def test_error_statuses_map_to_named_errors_without_the_key(
    server: ScriptedServer, status: int, expected: type[ModelHTTPError], key: str
) -> None:
    server.add(
        json_reply(
            status,
            {"error": {"type": "bad_thing", "message": f"rejected {key} here", "code": None}},
        )
    )
    with pytest.raises(expected) as caught:
        await collect(model(server, key=key), request(retries=ONE_TRY))
    assert type(caught.value) is expected
    assert caught.value.status == status  # type: ignore[attr-defined]
    assert key not in str(caught.value)
    assert "bad_thing: rejected [redacted] here" in str(caught.value)
    assert isinstance(caught.value.__cause__, openai.APIStatusError)


async def test_stream_cut_off_mid_call_is_a_connection_error(server: ScriptedServer) -> None:
    reply = openai_sse(
        [text("Hel"), call(0, call_id="call_1", name="weather", args='{"ci')], done=False, cut=True
    )
    reply.chunks.append(b'data: {"id": "c1", "obj')
    server.add(reply)
    seen: list[ModelEvent] = []
    with pytest.raises(ModelConnectionError):
        async for event in model(server).stream(request(retries=ONE_TRY)):
            seen.append(event)
    assert seen[0] == TextDelta(text="Hel")
    assert not any(isinstance(e, ToolCallEnd | Done) for e in seen)


async def test_stream_ending_without_finish_reason_is_a_connection_error(
    server: ScriptedServer,
) -> None:
    server.add(openai_sse([text("Hel")], done=False))
    with pytest.raises(ModelConnectionError, match="ended before the response was complete"):
        await collect(model(server), request(retries=ONE_TRY))


async def test_unreachable_server_is_a_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = OpenAIModel("gpt-test", api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ModelConnectionError) as caught:
        await collect(client, request(retries=ONE_TRY))
    assert KEY not in str(caught.value)


async def test_cancellation_mid_stream_stops_without_done(server: ScriptedServer) -> None:
    reply = openai_sse([text("one"), text("two"), text("three"), chunk(finish="stop")])
    reply.chunks.insert(1, 0.3)
    server.add(reply)
    req = request()
    seen: list[ModelEvent] = []

    async def consume() -> None:
        async for event in model(server).stream(req):
            seen.append(event)
            req.signal.cancel()

    await asyncio.wait_for(consume(), timeout=5)
    assert seen == [TextDelta(text="one")]


# --- what OpenAI's rules say about Chat Completions, on the enforcing loopback server ---


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def chat_model(server: ScriptedServer, name: str = "gpt-test") -> OpenAIModel:
    return OpenAIModel(name, api_key=KEY, base_url=f"{server.url}/v1", api="chat-completions")


def test_auto_is_responses_on_openais_endpoint_and_chat_completions_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert choose_api("auto", None) == "responses"
    assert choose_api("auto", "https://api.openai.com/v1") == "responses"
    assert choose_api("auto", "http://127.0.0.1:11434/v1") == "chat-completions"
    assert choose_api("chat-completions", None) == "chat-completions"
    assert choose_api("responses", "http://127.0.0.1:8000/v1") == "responses"
    assert OpenAIModel("gpt-test", api_key=KEY).api == "responses"
    assert OpenAIModel("m", api_key=KEY, base_url="http://127.0.0.1:1/v1").api == "chat-completions"


def test_create_client_passes_the_nodes_openai_api(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": KEY}
    forced = create_client(
        "openai/gpt-test", app_root=tmp_path, env=env, openai_api="chat-completions"
    )
    assert isinstance(forced, OpenAIModel) and forced.api == "chat-completions"
    auto = create_client("openai/gpt-test", app_root=tmp_path, env=env)
    assert isinstance(auto, OpenAIModel) and auto.api == "responses"


async def test_tools_with_reasoning_effort_are_refused_for_newer_models_and_the_error_says_what_to_do(
    openai_server: OpenAIServer,
) -> None:
    tools = [ToolDeclaration(name="weather", description="Weather.", input_schema=SCHEMA)]
    with pytest.raises(ModelHTTPError) as caught:
        await collect(chat_model(openai_server, "gpt-5.4"), request(tools=tools, reasoning="high"))
    message = str(caught.value)
    assert caught.value.status == 400
    assert "Function tools with reasoning_effort are not supported for gpt-5.4" in message
    assert 'define_agent(openai_api="responses")' in message
    # the same request through the Responses API is accepted
    openai_server.script(Turn([Said("ok")]))
    responses = OpenAIModel(
        "gpt-5.4", api_key=KEY, base_url=f"{openai_server.url}/v1", api="responses"
    )
    events = await collect(responses, request(tools=tools, reasoning="high"))
    assert isinstance(events[-1], Done)


async def test_a_tool_results_image_follows_the_tool_messages_as_a_user_message(
    openai_server: OpenAIServer,
) -> None:
    openai_server.script(openai_sse([text("a cat"), chunk(finish="stop")]))
    picture = ImagePart(media_type="image/png", data=b"\x89PNG")
    history: list[Message] = [
        user_message("what are these?"),
        assistant_message(
            tool_calls=[
                ToolCall(id="call_a", name="snap", input={}),
                ToolCall(id="call_b", name="snap", input={}),
            ]
        ),
        tool_result("call_a", "taken", media=[picture]),
        tool_result("call_b", "none"),
    ]
    await collect(chat_model(openai_server), request(messages=history))
    assert openai_server.refused == []
    messages = openai_server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert messages[3]["content"] == "taken"
    assert messages[5]["content"] == [
        {"type": "text", "text": "Attached to the result of tool call call_a:"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
    ]


async def test_user_media_goes_as_content_parts(openai_server: OpenAIServer) -> None:
    openai_server.script(openai_sse([text("ok"), chunk(finish="stop")]))
    message = user_message(
        "read",
        [
            ImagePart(media_type="image/jpeg", url="https://example.com/a.jpg"),
            DocumentPart(media_type="application/pdf", data=b"%PDF-1.7"),
            DocumentPart(media_type="application/pdf", url="https://example.com/b.pdf", name="b"),
            DocumentPart(media_type="text/markdown", data=b"# Notes", name="notes.md"),
        ],
    )
    await collect(chat_model(openai_server), request(messages=[message]))
    assert openai_server.requests[0].body["messages"][1]["content"] == [
        {"type": "text", "text": "read"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}},
        {
            "type": "file",
            "file": {
                "file_data": "data:application/pdf;base64,JVBERi0xLjc=",
                "filename": "document.pdf",
            },
        },
        {
            "type": "text",
            "text": "[document b at https://example.com/b.pdf: not attached, this API takes no file URLs]",
        },
        {"type": "text", "text": "notes.md:\n# Notes"},
    ]


async def test_usage_reports_cached_and_reasoning_tokens(openai_server: OpenAIServer) -> None:
    counts = usage(120, 30)
    counts["usage"]["prompt_tokens_details"] = {"cached_tokens": 100}
    counts["usage"]["completion_tokens_details"] = {"reasoning_tokens": 12}
    openai_server.script(openai_sse([text("ok"), chunk(finish="stop"), counts]))
    events = await collect(chat_model(openai_server), request())
    assert events[-1] == Done(
        stop_reason="end_turn",
        usage=TokenUsage(
            input_tokens=20, output_tokens=30, cache_read_tokens=100, reasoning_tokens=12
        ),
    )


async def test_structured_output_uses_response_format(openai_server: OpenAIServer) -> None:
    openai_server.script(openai_sse([text('{"city": "Oslo"}'), chunk(finish="stop")]))
    strict = {**SCHEMA, "additionalProperties": False}
    await collect(chat_model(openai_server), request(output_schema=strict))
    assert openai_server.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "final_answer", "schema": strict, "strict": True},
    }


async def test_openais_reasoning_parts_stay_out_of_chat_completions(
    openai_server: OpenAIServer,
) -> None:
    openai_server.script(openai_sse([text("ok"), chunk(finish="stop")]))
    earlier = AssistantMessage(
        parts=[
            ReasoningPart(provider="openai", text="hmm", payload="gAAAA", item_id="rs_1"),
            ProviderPart(provider="openai", block={"type": "web_search_call"}, text="searched"),
            TextPart(text=" Done."),
        ]
    )
    history: list[Message] = [user_message("q"), earlier, user_message("next")]
    await collect(chat_model(openai_server), request(messages=history))
    assert openai_server.requests[0].body["messages"][2] == {
        "role": "assistant",
        "content": "searched Done.",
    }
