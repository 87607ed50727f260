"""The Responses API adapter: the real ``openai`` SDK against a loopback server that enforces
OpenAI's documented rules (tests/models/openai_rules.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

from eve.authoring.tools import define_tool
from eve.errors import ModelConnectionError, ModelHTTPError, ModelRateLimited
from eve.execution import agent_setup, run_agent
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
    ToolResultMessage,
    assistant_message,
    tool_result,
    user_message,
)
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
from eve.models.openai import OpenAIModel
from tests.execution.helpers import live
from tests.models.openai_server import (
    Called,
    Hosted,
    OpenAIServer,
    Said,
    Thought,
    Turn,
    rate_limited,
    usage,
)

KEY = "sk-test-SECRET-1234567890"
STRICT = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def model(server: OpenAIServer, name: str = "gpt-4.1") -> OpenAIModel:
    return OpenAIModel(name, api_key=KEY, base_url=f"{server.url}/v1", api="responses")


def request(*messages: Message, **overrides: Any) -> ModelRequest:
    """One try: these tests read how one failure maps (retrying is tests/models/test_retries)."""
    history = list(messages) or [user_message("hi")]
    overrides.setdefault("retries", Retries(attempts=1))
    return ModelRequest(system="Be brief.", messages=history, **overrides)


async def collect(client: OpenAIModel, req: ModelRequest) -> list[ModelEvent]:
    return [event async for event in client.stream(req)]


async def test_text_streams_and_completes_with_usage_by_kind(server: OpenAIServer) -> None:
    server.script(Turn([Said("Hello world")], usage=usage(30, 7, cached=20)))
    events = await collect(model(server), request())
    assert events == [
        TextDelta(text="Hello"),
        TextDelta(text=" world"),
        PartCompleted(part=TextPart(text="Hello world")),
        Done(
            stop_reason="end_turn",
            usage=TokenUsage(input_tokens=10, output_tokens=7, cache_read_tokens=20),
        ),
    ]
    sent = server.requests[0]
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = sent.body
    assert (body["store"], body["stream"], body["instructions"]) == (False, True, "Be brief.")
    assert body["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
    # a model that does not reason is asked for no reasoning and no encrypted content
    assert "include" not in body and "reasoning" not in body


async def test_reasoning_streams_as_parts_and_its_tokens_are_counted(server: OpenAIServer) -> None:
    server.script(
        Turn(
            [Thought("Need the weather."), Called("weather", '{"city": "Oslo"}', "call_1")],
            usage=usage(50, 40, reasoning=32),
        )
    )
    events = await collect(model(server, "gpt-5-mini"), request(reasoning="high"))
    reasoning = [e.part for e in events if isinstance(e, PartCompleted)]
    assert reasoning == [
        ReasoningPart(
            provider="openai",
            text="Need the weather.",
            payload=server.produced.reasoning["rs_1"],
            item_id="rs_1",
        )
    ]
    assert events[0] == ReasoningDelta(text="Need the weather.")
    assert ToolCallStart(id="call_1", name="weather") in events
    assert [e.json_delta for e in events if isinstance(e, ToolCallDelta)] == [
        '{"city":',
        ' "Oslo"}',
    ]
    assert events[-2:] == [
        ToolCallEnd(id="call_1", name="weather", input={"city": "Oslo"}),
        Done(
            stop_reason="tool_use",
            usage=TokenUsage(input_tokens=50, output_tokens=40, reasoning_tokens=32),
        ),
    ]
    body = server.requests[0].body
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}


@pytest.mark.parametrize(
    ("level", "sent"),
    [
        ("none", {"effort": "none"}),
        ("minimal", {"effort": "minimal", "summary": "auto"}),
        ("xhigh", {"effort": "xhigh", "summary": "auto"}),
    ],
)
async def test_reasoning_levels_map_to_effort_and_summaries(
    server: OpenAIServer, level: str, sent: dict[str, str]
) -> None:
    server.script(Turn([Said("ok")]))
    await collect(model(server, "gpt-5"), request(reasoning=level))
    assert server.requests[0].body["reasoning"] == sent


class City(pydantic.BaseModel):
    city: str


async def test_reasoning_goes_back_verbatim_and_in_order_between_steps(
    server: OpenAIServer,
) -> None:
    weather = live(
        "weather",
        define_tool(description="Weather.", input_schema=City, execute=lambda d, c: "sunny"),
    )
    server.script(
        Turn([Thought("Look it up."), Called("weather", '{"city": "Oslo"}', "call_1")]),
        Turn([Thought("It is sunny."), Said("Sunny in Oslo.")]),
    )
    setup = agent_setup(model(server, "gpt-5"), tools=[weather], reasoning="medium")
    result = await run_agent(setup, "weather in Oslo?")
    assert result.final_text == "Sunny in Oslo."
    assert server.refused == []
    second = server.requests[1].body["input"]
    assert [item.get("type", "message") for item in second] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert second[1] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Look it up."}],
        "encrypted_content": server.produced.reasoning["rs_1"],
    }
    assert second[3] == {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}
    step = next(m for m in result.messages if isinstance(m, AssistantMessage))
    assert [type(p).__name__ for p in step.parts] == ["ReasoningPart", "ToolCallPart"]


def _reasoned_history(server: OpenAIServer, reasoning: ReasoningPart | None) -> list[Message]:
    parts: list[Any] = [reasoning] if reasoning else []
    call = ToolCall(id="call_1", name="weather", input={"city": "Oslo"})
    return [
        user_message("weather?"),
        AssistantMessage(parts=[*parts, call]),
        tool_result("call_1", "sunny"),
    ]


async def _first_step(server: OpenAIServer) -> ReasoningPart:
    server.script(Turn([Thought("Look it up."), Called("weather", '{"city": "Oslo"}', "call_1")]))
    events = await collect(model(server, "gpt-5"), request(reasoning="low"))
    return next(e.part for e in events if isinstance(e, PartCompleted))  # type: ignore[misc]


async def test_the_server_refuses_a_call_sent_back_without_its_reasoning(
    server: OpenAIServer,
) -> None:
    await _first_step(server)
    history = _reasoned_history(server, None)
    with pytest.raises(ModelHTTPError, match="without its required 'reasoning' item: 'rs_1'"):
        await collect(model(server, "gpt-5"), request(*history, reasoning="low"))


async def test_the_server_refuses_altered_encrypted_content(server: OpenAIServer) -> None:
    part = await _first_step(server)
    forged = ReasoningPart(provider="openai", text=part.text, payload="forged", item_id="rs_1")
    with pytest.raises(ModelHTTPError, match="could not be verified") as caught:
        await collect(
            model(server, "gpt-5"), request(*_reasoned_history(server, forged), reasoning="low")
        )
    assert caught.value.status == 400


async def test_another_providers_reasoning_is_dropped_and_its_blocks_become_text(
    server: OpenAIServer,
) -> None:
    server.script(Turn([Said("ok")]))
    foreign = AssistantMessage(
        parts=[
            ReasoningPart(provider="anthropic", text="hmm", signature="sig"),
            ProviderPart(provider="anthropic", block={"type": "server_tool_use"}, text="searched"),
            TextPart(text="Here."),
        ]
    )
    await collect(model(server), request(user_message("q"), foreign, user_message("and?")))
    assert server.requests[0].body["input"][1:3] == [
        {"role": "assistant", "content": "searched"},
        {"role": "assistant", "content": "Here."},
    ]


async def test_images_and_documents_go_as_input_parts(server: OpenAIServer) -> None:
    server.script(Turn([Said("ok")]))
    message = user_message(
        "look",
        [
            ImagePart(media_type="image/png", data=b"\x89PNG"),
            ImagePart(media_type="image/jpeg", url="https://example.com/a.jpg"),
            DocumentPart(media_type="application/pdf", data=b"%PDF-1.7", name="spec.pdf"),
            DocumentPart(media_type="application/pdf", url="https://example.com/b.pdf"),
            DocumentPart(media_type="text/plain", data=b"plain words", name="notes.txt"),
        ],
    )
    await collect(model(server), request(message))
    assert server.requests[0].body["input"][0]["content"] == [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw==", "detail": "auto"},
        {"type": "input_image", "image_url": "https://example.com/a.jpg", "detail": "auto"},
        {
            "type": "input_file",
            "file_data": "data:application/pdf;base64,JVBERi0xLjc=",
            "filename": "spec.pdf",
        },
        {"type": "input_file", "file_url": "https://example.com/b.pdf"},
        {"type": "input_text", "text": "notes.txt:\nplain words"},
    ]


async def test_a_tool_results_image_goes_in_its_output(server: OpenAIServer) -> None:
    server.script(Turn([Said("a cat")]))
    history = [
        user_message("what is it?"),
        assistant_message(tool_calls=[ToolCall(id="call_1", name="snap", input={})]),
        ToolResultMessage(
            tool_call_id="call_1",
            parts=[TextPart(text="taken"), ImagePart(media_type="image/gif", data=b"GIF89a")],
            is_error=False,
        ),
    ]
    await collect(model(server), request(*history))
    output = server.requests[0].body["input"][2]
    assert output == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": [
            {"type": "input_text", "text": "taken"},
            {
                "type": "input_image",
                "image_url": "data:image/gif;base64,R0lGODlh",
                "detail": "auto",
            },
        ],
    }


async def test_structured_output_uses_text_format(server: OpenAIServer) -> None:
    server.script(Turn([Said('{"city": "Oslo"}')]), Turn([Said('{"city": "Oslo"}')]))
    client = model(server)
    assert client.structured_output is True
    await collect(client, request(output_schema=STRICT))
    assert server.requests[0].body["text"] == {
        "format": {"type": "json_schema", "name": "final_answer", "schema": STRICT, "strict": True}
    }
    loose = {"type": "object", "properties": {"city": {"type": "string", "default": "Oslo"}}}
    await collect(client, request(output_schema=loose))
    assert server.requests[1].body["text"]["format"]["strict"] is False
    assert server.refused == []


async def test_tools_are_strict_only_when_their_schema_allows(server: OpenAIServer) -> None:
    server.script(Turn([Said("ok")]))
    loose = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = [
        ToolDeclaration(name="weather", description="Weather.", input_schema=STRICT),
        ToolDeclaration(name="search", description="Search.", input_schema=loose),
    ]
    hosted = [ProviderToolDeclaration(name="web", provider="openai", type="web_search")]
    elsewhere = [ProviderToolDeclaration(name="x", provider="anthropic", type="web_search_2025")]
    await collect(model(server), request(tools=tools, provider_tools=hosted + elsewhere))
    sent = server.requests[0].body["tools"]
    assert [(t["type"], t.get("name"), t.get("strict")) for t in sent] == [
        ("function", "weather", True),
        ("function", "search", False),
        ("web_search", None, None),
    ]


async def test_hosted_tool_items_and_citations_come_back_verbatim(server: OpenAIServer) -> None:
    search = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "eve"},
    }
    citation = {
        "type": "url_citation",
        "start_index": 0,
        "end_index": 3,
        "url": "https://example.com",
        "title": "Example",
    }
    server.script(Turn([Hosted(search), Said("Eve is a name.", [citation])]), Turn([Said("ok")]))
    events = await collect(model(server), request())
    parts = [e.part for e in events if isinstance(e, PartCompleted)]
    assert parts[0] == ProviderPart(provider="openai", block=search)
    assert isinstance(parts[1], ProviderPart) and parts[1].text == "Eve is a name."
    assert parts[1].block["content"][0]["annotations"] == [citation]
    history = [user_message("hi"), AssistantMessage(parts=parts), user_message("more")]
    await collect(model(server), request(*history))
    assert server.requests[1].body["input"][1:3] == [search, parts[1].block]
    assert server.refused == []


async def test_incomplete_response_stops_at_max_tokens(server: OpenAIServer) -> None:
    server.script(Turn([Said("Once upon")], end="incomplete"))
    events = await collect(model(server), request())
    assert isinstance(events[-1], Done) and events[-1].stop_reason == "max_tokens"


async def test_failed_response_is_a_server_error(server: OpenAIServer) -> None:
    server.script(Turn([Said("partial")], end="failed"))
    with pytest.raises(ModelHTTPError, match="server_error") as caught:
        await collect(model(server), request())
    assert caught.value.status == 500


async def test_error_event_mid_stream_keeps_its_kind(server: OpenAIServer) -> None:
    server.script(Turn([Said("partial")], end="error", error=("rate_limit_exceeded", "Slow down")))
    with pytest.raises(ModelRateLimited, match="rate_limit_exceeded: Slow down"):
        await collect(model(server), request())


async def test_cut_stream_is_a_connection_error(server: OpenAIServer) -> None:
    server.script(Turn([Said("partial")], end="cut"))
    with pytest.raises(ModelConnectionError, match="incomplete chunked read"):
        await collect(model(server), request())


async def test_stream_ending_without_completion_is_a_connection_error(
    server: OpenAIServer,
) -> None:
    server.script(Turn([Said("partial")], end="unfinished"))
    with pytest.raises(ModelConnectionError, match=r"no response\.completed"):
        await collect(model(server), request())


async def test_429_carries_the_wait_the_server_asks_for(server: OpenAIServer) -> None:
    server.script(rate_limited(2))
    with pytest.raises(ModelRateLimited) as caught:
        await collect(model(server), request())
    assert caught.value.retry_after == 2.0
    assert KEY not in str(caught.value)


async def test_encrypted_content_is_refused_for_a_model_that_does_not_reason(
    server: OpenAIServer,
) -> None:
    # eve asked for reasoning on a model without it: the provider's refusal reaches the user
    with pytest.raises(ModelHTTPError, match="not supported with this model"):
        await collect(model(server, "gpt-4.1"), request(reasoning="low"))
