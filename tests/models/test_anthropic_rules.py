"""The Anthropic adapter against a server that keeps the Messages API's rules (anthropic_server).

Real ``anthropic`` SDK, real HTTP: thinking round-trips, adaptive or budget thinking by model,
server tool blocks and pause_turn, prompt caching and its usage, media, structured output,
replayed steps, and the failures the API answers with.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from eve.errors import ModelHTTPError, ModelRateLimited
from eve.execution.checkpoints import RanAll, StepPart
from eve.execution.response import ModelResponse
from eve.manifest import PromptCache, Retries
from eve.messages import (
    AssistantMessage,
    AssistantPart,
    DocumentPart,
    ImagePart,
    Message,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    tool_result,
    user_message,
)
from eve.models.anthropic import MAX_PAUSE_CONTINUATIONS, AnthropicModel
from eve.models.anthropic_request import request_params
from eve.models.base import ModelRequest, ToolDeclaration
from eve.models.events import Done, ModelEvent, PartCompleted, TokenUsage
from eve.tools import tool
from tests.execution.helpers import live, turn
from tests.models.anthropic_server import (
    AnthropicServer,
    Turn,
    error_mid_stream,
    overloaded,
    rate_limited,
)

KEY = "sk-ant-test-rules"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
SEARCH = {
    "type": "server_tool_use",
    "id": "srvtoolu_1",
    "name": "web_search",
    "input": {"query": "oslo weather"},
}
RESULTS = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "title": "Oslo forecast",
            "url": "https://weather.example/oslo",
            "encrypted_content": "ENC-1",
            "page_age": "1 day",
        }
    ],
}
CITED = {
    "type": "text",
    "text": "Sunny in Oslo.",
    "citations": [
        {
            "type": "web_search_result_location",
            "url": "https://weather.example/oslo",
            "title": "Oslo forecast",
            "encrypted_index": "IDX-1",
            "cited_text": "sunny",
        }
    ],
}


@pytest.fixture
def api() -> Iterator[AnthropicServer]:
    with AnthropicServer() as running:
        yield running


def client(api: AnthropicServer, model: str = "claude-sonnet-4-5") -> AnthropicModel:
    return AnthropicModel(model, api_key=KEY, base_url=api.url)


@tool
def weather(city: str) -> str:
    """Weather by city."""
    return f"sunny in {city}"


def call(call_id: str = "toolu_1", city: str = "Oslo") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "weather", "input": {"city": city}}


async def collect(model: AnthropicModel, request: ModelRequest) -> list[ModelEvent]:
    return [event async for event in model.stream(request)]


def sent(api: AnthropicServer, n: int) -> dict[str, Any]:
    body: dict[str, Any] = api.requests[n].body
    return body


def strip_cache(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]


# --- thinking round-trips -------------------------------------------------------------------


@pytest.mark.parametrize(
    "opening",
    [
        [{"type": "thinking", "thinking": "Oslo first."}, {"type": "text", "text": "Checking."}],
        [{"type": "redacted_thinking"}],
        [{"type": "thinking", "thinking": "Hm."}, {"type": "redacted_thinking"}],
    ],
    ids=["thinking-text-tool", "redacted", "thinking-redacted-tool"],
)
async def test_thinking_goes_back_verbatim_before_the_tool_use(
    api: AnthropicServer, opening: list[dict[str, Any]]
) -> None:
    api.script(
        Turn([*opening, call()], "tool_use"),
        Turn(
            [{"type": "thinking", "thinking": "Done."}, {"type": "text", "text": "Sunny."}],
            "end_turn",
        ),
    )
    result = await turn(client=client(api), tools=[live("weather", weather)], reasoning="low")
    assert result.final_text == "Sunny."
    assert [r.path for r in api.requests] == ["/v1/messages"] * 2  # no 400 on the way
    assistant = sent(api, 1)["messages"][1]["content"]
    assert [b["type"] for b in assistant] == [b["type"] for b in [*opening, call()]]
    first = sent(api, 1)["thinking"]
    assert first == {"type": "enabled", "budget_tokens": 2048}
    recorded = result.messages[1]
    assert isinstance(recorded, AssistantMessage)
    assert [type(p).__name__ for p in recorded.parts][-1] == "ToolCallPart"


async def test_the_server_rejects_a_tool_loop_without_its_thinking(api: AnthropicServer) -> None:
    # the rule the adapter is held to, shown on the server with the raw SDK (imported here:
    # not every test worker that collects this module runs it)
    import anthropic

    sdk = anthropic.AsyncAnthropic(api_key=KEY, base_url=api.url)
    create: Any = sdk.messages.create  # raw request bodies, as a user of the SDK may send
    with pytest.raises(
        anthropic.BadRequestError, match="Expected `thinking` or `redacted_thinking`"
    ):
        await create(
            model="claude-sonnet-4-5",
            max_tokens=4000,
            thinking={"type": "enabled", "budget_tokens": 2048},
            messages=[
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": [call()]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}
                    ],
                },
            ],
        )
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):
        await create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            messages=[
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [{"type": "thinking", "thinking": "x", "signature": "forged"}],
                },
                {"role": "user", "content": "again"},
            ],
        )


async def test_a_tool_loop_begun_without_thinking_continues_without_it(
    api: AnthropicServer,
) -> None:
    # tool calls made before reasoning was on (or by another provider) carry no thinking
    api.script(Turn([{"type": "text", "text": "ok"}], "end_turn"))
    history: list[Message] = [
        user_message("weather?"),
        AssistantMessage(
            parts=[ToolCallPart(id="toolu_1", name="weather", input={"city": "Oslo"})]
        ),
        tool_result("toolu_1", "sunny"),
    ]
    request = ModelRequest(system="", messages=history, reasoning="high")
    events = await collect(client(api), request)
    assert isinstance(events[-1], Done)
    assert "thinking" not in sent(api, 0)


# --- adaptive or budget ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "mode", "thinking", "effort"),
    [
        ("claude-opus-4-7", "auto", {"type": "adaptive"}, "high"),
        ("claude-opus-4-6", "auto", {"type": "adaptive"}, "high"),
        ("claude-opus-4-6", "budget", {"type": "enabled", "budget_tokens": 16384}, None),
        ("claude-sonnet-4-5", "auto", {"type": "enabled", "budget_tokens": 16384}, None),
        ("claude-3-7-sonnet-20250219", "auto", {"type": "enabled", "budget_tokens": 16384}, None),
        ("us.anthropic.claude-mythos-preview", "auto", {"type": "adaptive"}, "high"),
        ("my-gateway-alias", "auto", {"type": "enabled", "budget_tokens": 16384}, None),
        ("my-gateway-alias", "adaptive", {"type": "adaptive"}, "high"),
    ],
)
@pytest.mark.filterwarnings("ignore:Using Claude with:UserWarning")  # the SDK's, on forcing
async def test_thinking_kind_follows_the_table_and_the_override(
    api: AnthropicServer, model: str, mode: Any, thinking: dict[str, Any], effort: str | None
) -> None:
    api.script(Turn([{"type": "text", "text": "ok"}], "end_turn"))
    request = ModelRequest(
        system="s",
        messages=[user_message("hi")],
        reasoning="high",
        thinking=mode,
        max_output_tokens=1000,
    )
    await collect(client(api, model), request)
    body = sent(api, 0)
    assert body["thinking"] == thinking
    assert body.get("output_config", {}).get("effort") == effort
    assert body["max_tokens"] == 1000 + 16384


async def test_enabled_thinking_on_an_adaptive_only_model_is_the_api_s_400(
    api: AnthropicServer,
) -> None:
    request = ModelRequest(
        system="", messages=[user_message("hi")], reasoning="low", thinking="budget"
    )
    with pytest.raises(ModelHTTPError) as caught:
        await collect(client(api, "claude-opus-4-7"), request)
    assert caught.value.status == 400
    assert '"enabled" is not supported' in str(caught.value)


async def test_the_adaptive_table_spares_the_first_request(api: AnthropicServer) -> None:
    api.script(Turn([call()], "tool_use"), Turn([{"type": "text", "text": "Sunny."}], "end_turn"))
    result = await turn(
        client=client(api, "claude-opus-4-7"), tools=[live("weather", weather)], reasoning="medium"
    )
    assert result.final_text == "Sunny."
    assert sent(api, 0)["thinking"] == {"type": "adaptive"}
    assert sent(api, 0)["output_config"] == {"effort": "medium"}


# --- provider tools and pause_turn ----------------------------------------------------------


async def test_server_tool_blocks_and_citations_stay_in_the_history(api: AnthropicServer) -> None:
    api.script(
        Turn([SEARCH, RESULTS, CITED, {"type": "text", "text": "Enjoy."}], "end_turn"),
        Turn([{"type": "text", "text": "Still sunny."}], "end_turn"),
    )
    model = client(api)
    first = await turn(client=model, user_message="weather in Oslo?")
    parts = first.messages[-1].parts
    assert [p.block for p in parts if isinstance(p, ProviderPart)] == [SEARCH, RESULTS, CITED]
    # cited text is a provider part (its citations go back with it) and part of the answer
    assert first.final_text == "Sunny in Oslo.Enjoy."
    await turn(client=model, messages=first.messages, user_message="and now?")
    again = strip_cache(sent(api, 1)["messages"][1]["content"])
    assert again == [SEARCH, RESULTS, CITED, {"type": "text", "text": "Enjoy."}]


async def test_pause_turn_continues_the_response(api: AnthropicServer) -> None:
    api.script(
        Turn([SEARCH], "pause_turn", output_tokens=3),
        Turn([RESULTS, CITED], "end_turn", output_tokens=4),
    )
    request = ModelRequest(system="", messages=[user_message("weather in Oslo?")])
    events = await collect(client(api), request)
    dones = [e for e in events if isinstance(e, Done)]
    assert len(dones) == 1 and dones[0].stop_reason == "end_turn"
    assert dones[0].usage.output_tokens == 7
    blocks = [
        e.part.block
        for e in events
        if isinstance(e, PartCompleted) and isinstance(e.part, ProviderPart)
    ]
    assert blocks == [SEARCH, RESULTS, CITED]
    continued = sent(api, 1)["messages"]
    assert continued[-1]["role"] == "assistant"
    assert strip_cache(continued[-1]["content"]) == [SEARCH]


async def test_pause_turn_is_continued_a_bounded_number_of_times(api: AnthropicServer) -> None:
    api.script(*[Turn([{"type": "text", "text": f"part {n}."}], "pause_turn") for n in range(10)])
    events = await collect(client(api), ModelRequest(system="", messages=[user_message("go")]))
    assert len(api.requests) == MAX_PAUSE_CONTINUATIONS + 1
    assert events[-1] == Done(stop_reason="other", usage=events[-1].usage)  # type: ignore[union-attr]


# --- prompt caching -------------------------------------------------------------------------

LONG_SYSTEM = "You are a careful weather assistant. " * 200


async def test_breakpoints_move_forward_and_usage_reports_cache_reads_and_writes(
    api: AnthropicServer,
) -> None:
    api.script(
        Turn([call("toolu_1", "Oslo")], "tool_use"),
        Turn([call("toolu_2", "Rome")], "tool_use"),
        Turn([{"type": "text", "text": "Both sunny."}], "end_turn"),
    )
    result = await turn(client=client(api), tools=[live("weather", weather)], system=LONG_SYSTEM)
    assert result.final_text == "Both sunny."
    for n in range(3):
        body = sent(api, n)
        marked = [b for b in _all_blocks(body) if "cache_control" in b]
        assert 1 <= len(marked) <= 4
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    first, second, third = api.usages
    assert first["cache_creation_input_tokens"] > 0 and first["cache_read_input_tokens"] == 0
    assert second["cache_read_input_tokens"] >= first["cache_creation_input_tokens"]
    assert third["cache_read_input_tokens"] > second["cache_read_input_tokens"]
    usage = result.usage
    assert usage.cache_read_tokens == sum(u["cache_read_input_tokens"] for u in api.usages)
    assert usage.cache_write_tokens == sum(u["cache_creation_input_tokens"] for u in api.usages)
    assert usage.input_tokens == sum(u["input_tokens"] for u in api.usages)


async def test_prompt_cache_off_sends_no_breakpoint_and_one_hour_ttl(api: AnthropicServer) -> None:
    api.script(
        Turn([{"type": "text", "text": "a"}], "end_turn"),
        Turn([{"type": "text", "text": "b"}], "end_turn"),
    )
    off = ModelRequest(
        system=LONG_SYSTEM, messages=[user_message("hi")], prompt_cache=PromptCache(enabled=False)
    )
    events = await collect(client(api), off)
    assert not [b for b in _all_blocks(sent(api, 0)) if "cache_control" in b]
    assert events[-1] == Done(
        stop_reason="end_turn",
        usage=TokenUsage(input_tokens=api.usages[0]["input_tokens"], output_tokens=5),
    )
    assert "cache_read_input_tokens" not in api.usages[0]
    hour = ModelRequest(
        system=LONG_SYSTEM, messages=[user_message("hi")], prompt_cache=PromptCache(ttl="1h")
    )
    await collect(client(api), hour)
    assert sent(api, 1)["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def _all_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = [*body.get("tools", []), *body.get("system", [])]
    for message in body["messages"]:
        blocks.extend(message["content"])
    return blocks


# --- media, structured output, replay, other providers --------------------------------------


async def test_images_and_documents_go_as_blocks_in_user_turns_and_tool_results(
    api: AnthropicServer,
) -> None:
    api.script(Turn([{"type": "text", "text": "ok"}], "end_turn"))
    png = ImagePart(media_type="image/png", data=b"\x89PNG")
    pdf = DocumentPart(media_type="application/pdf", url="https://example.com/a.pdf", name="a.pdf")
    notes = DocumentPart(media_type="text/plain", data=b"plain notes")
    history: list[Message] = [
        user_message("look", attachments=[png, pdf]),
        AssistantMessage(parts=[ToolCallPart(id="toolu_1", name="shot", input={})]),
        tool_result("toolu_1", "here", media=[notes, png]),
    ]
    await collect(client(api), ModelRequest(system="", messages=history))
    user, _, results = sent(api, 0)["messages"]
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="},
    }
    document = {
        "type": "document",
        "source": {"type": "url", "url": "https://example.com/a.pdf"},
        "title": "a.pdf",
    }
    assert strip_cache(user["content"]) == [{"type": "text", "text": "look"}, image, document]
    assert strip_cache(results["content"])[0]["content"] == [
        {"type": "text", "text": "here"},
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "plain notes"},
        },
        image,
    ]


async def test_structured_output_is_native_where_the_model_has_it(api: AnthropicServer) -> None:
    api.script(Turn([{"type": "text", "text": '{"city": "Oslo"}'}], "end_turn"))
    assert client(api, "claude-sonnet-4-5").structured_output is True
    assert client(api, "claude-3-7-sonnet").structured_output is False
    assert client(api, "some-gateway-alias").structured_output is False
    request = ModelRequest(system="", messages=[user_message("city?")], output_schema=SCHEMA)
    await collect(client(api), request)
    assert sent(api, 0)["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}


async def test_a_replayed_step_sends_the_same_blocks(api: AnthropicServer) -> None:
    api.script(
        Turn([{"type": "thinking", "thinking": "Plan."}, SEARCH, RESULTS, call()], "tool_use")
    )
    request = ModelRequest(system="s", messages=[user_message("go")], reasoning="low")
    events = await collect(client(api), request)
    parts: list[AssistantPart] = [e.part for e in events if isinstance(e, PartCompleted)]
    parts.append(ToolCallPart(id="toolu_1", name="weather", input={"city": "Oslo"}))
    response = ModelResponse(parts=parts, finish_reason="tool_use", usage=TokenUsage())
    recorded = msgspec.json.encode(RanAll(response=response))
    replayed = msgspec.json.decode(recorded, type=StepPart)
    assert replayed.response is not None
    live_next: list[Message] = [
        user_message("go"),
        response.message(),
        tool_result("toolu_1", "sunny"),
    ]
    replay_next: list[Message] = [
        user_message("go"),
        replayed.response.message(),
        tool_result("toolu_1", "sunny"),
    ]
    tools = [ToolDeclaration(name="weather", description="d", input_schema=SCHEMA)]

    def params(history: list[Message]) -> dict[str, Any]:
        return request_params(
            "claude-sonnet-4-5",
            ModelRequest(system="s", messages=history, tools=tools, reasoning="low"),
        )

    assert params(replay_next) == params(live_next)
    assert params(replay_next)["messages"][1]["content"][0]["type"] == "thinking"


def test_another_provider_s_parts_are_dropped_or_become_text() -> None:
    history: list[Message] = [
        user_message("hi"),
        AssistantMessage(
            parts=[
                ReasoningPart(provider="openai", text="secret plan", payload="gAAA"),
                ProviderPart(
                    provider="openai", block={"type": "web_search_call"}, text="searched: oslo"
                ),
                TextPart(text="Sunny."),
            ]
        ),
        user_message("thanks"),
    ]
    body = request_params("claude-sonnet-4-5", ModelRequest(system="", messages=history))
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "searched: oslo"},
        {"type": "text", "text": "Sunny."},
    ]


# --- failures -------------------------------------------------------------------------------


async def test_overloaded_rate_limited_and_mid_stream_errors(api: AnthropicServer) -> None:
    api.script(
        overloaded(),
        rate_limited(7),
        error_mid_stream("par"),
    )
    # one try each: how a failure maps (retrying them is tests/models/test_retries.py)
    request = ModelRequest(system="", messages=[user_message("hi")], retries=Retries(attempts=1))
    with pytest.raises(ModelHTTPError) as busy:
        await collect(client(api), request)
    assert busy.value.status == 529
    with pytest.raises(ModelRateLimited) as limited:
        await collect(client(api), request)
    assert limited.value.retry_after == 7.0
    with pytest.raises(ModelHTTPError) as mid:
        await collect(client(api), request)
    assert mid.value.status == 529
