"""The Bedrock adapter against a server that keeps the Converse API's rules (bedrock_server).

Real ``boto3``, real HTTP: parallel tool calls answered in one message, reasoning and its
signature sent back verbatim (also from a replayed step), cache points and the cache usage
they bring, images and documents, reasoning fields per model family, stop reasons, and the
requests the API refuses.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from eve.errors import AttachmentUnsupported, ModelHTTPError, ModelSettingUnsupported
from eve.manifest import ModelSettings, PromptCache, Retries
from eve.messages import (
    AssistantMessage,
    DocumentPart,
    ImagePart,
    Message,
    ReasoningPart,
    ToolCallPart,
    tool_result,
    user_message,
)
from eve.models.base import ModelRequest, ToolDeclaration
from eve.models.bedrock import BedrockModel, bedrock_model
from eve.models.bedrock_request import request_params
from eve.models.events import Done, ModelEvent, PartCompleted, ReasoningDelta
from eve.tools import tool
from tests.execution.helpers import live, turn
from tests.models.bedrock_server import BedrockServer, Turn
from tests.models.gemini_server import anthropic_tool_loop, cold_then_warm, replayed_message

CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"
LLAMA = "meta.llama3-3-70b-instruct-v1:0"
NOVA2 = "us.amazon.nova-2-lite-v1:0"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
ONE_TRY = Retries(attempts=1)


@pytest.fixture
def api() -> Iterator[BedrockServer]:
    with BedrockServer() as running:
        yield running


def client(api: BedrockServer, model: str = CLAUDE) -> BedrockModel:
    return bedrock_model(model, api.env)


@tool
def weather(city: str) -> str:
    """Weather by city."""
    return f"sunny in {city}"


def use(city: str, call_id: str) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": call_id, "name": "weather", "input": {"city": city}}}


def thought(text: str) -> dict[str, Any]:
    return {"reasoningContent": {"reasoningText": {"text": text}}}


async def collect(model: BedrockModel, request: ModelRequest) -> list[ModelEvent]:
    return [e async for e in model.stream(request)]


def declaration() -> ToolDeclaration:
    return ToolDeclaration(name="weather", description="Weather by city.", input_schema=SCHEMA)


# --- tools and reasoning ---------------------------------------------------------------------


async def test_parallel_calls_are_answered_in_one_message_in_order(api: BedrockServer) -> None:
    api.script(
        Turn([{"text": "Checking both."}, use("Oslo", "t1"), use("Rome", "t2")]),
        Turn([{"text": "Sunny in both."}]),
        Turn([{"text": "You are welcome."}]),
    )
    result = await turn(client=client(api), tools=[live("weather", weather)])
    assert result.final_text == "Sunny in both."
    assistant, answers = api.bodies[1]["messages"][1:3]
    assert [list(b) for b in assistant["content"]] == [["text"], ["toolUse"], ["toolUse"]]
    results = [b["toolResult"] for b in answers["content"] if "toolResult" in b]
    assert [r["toolUseId"] for r in results] == ["t1", "t2"]
    assert (
        results[0]["content"] == [{"text": "sunny in Oslo"}] and results[0]["status"] == "success"
    )
    spec = api.bodies[0]["toolConfig"]["tools"][0]["toolSpec"]
    assert spec["name"] == "weather" and spec["inputSchema"]["json"]["required"] == ["city"]
    # the next user turn: the whole history is accepted again
    await turn(client=client(api), messages=result.messages, user_message="thanks")
    assert len(api.requests) == 3


async def test_reasoning_goes_back_with_its_signature_verbatim(api: BedrockServer) -> None:
    api.script(
        Turn([thought("Oslo first, then answer."), use("Oslo", "t1")]),
        Turn([{"text": "Sunny."}]),
    )
    result = await turn(client=client(api), tools=[live("weather", weather)], reasoning="low")
    assert result.final_text == "Sunny."
    first = api.bodies[0]
    assert first["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 2048}
    }
    assert first["inferenceConfig"]["maxTokens"] == 4096 + 2048
    assistant = result.messages[1]
    assert isinstance(assistant, AssistantMessage)
    reasoning = assistant.parts[0]
    assert isinstance(reasoning, ReasoningPart) and reasoning.signature
    resent = api.bodies[1]["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]
    assert resent == {"text": "Oslo first, then answer.", "signature": reasoning.signature}


async def test_a_replayed_step_sends_the_same_messages(api: BedrockServer) -> None:
    api.script(Turn([thought("Plan."), use("Oslo", "t1"), use("Rome", "t2")]))
    request = ModelRequest(
        system="", messages=[user_message("go")], tools=[declaration()], reasoning="low"
    )
    original, replayed = replayed_message(await collect(client(api), request))

    def messages(message: AssistantMessage) -> list[dict[str, Any]]:
        history: list[Message] = [
            user_message("go"),
            message,
            tool_result("t1", "sunny", name="weather"),
            tool_result("t2", "rainy", name="weather"),
        ]
        follow_up = ModelRequest(system="", messages=history, tools=[declaration()])
        return list(request_params(CLAUDE, follow_up)["messages"])

    assert messages(replayed) == messages(original)
    block = messages(replayed)[1]["content"][0]
    assert block["reasoningContent"]["reasoningText"]["signature"]


async def test_redacted_reasoning_goes_back_as_the_bytes_it_came_as(api: BedrockServer) -> None:
    redacted = {"reasoningContent": {"redactedContent": "hidden"}}
    api.script(Turn([redacted, {"text": "Done."}]), Turn([{"text": "Again."}]))
    first = await turn(client=client(api), reasoning="low")
    assistant = first.messages[1]
    assert isinstance(assistant, AssistantMessage)
    part = assistant.parts[0]
    assert isinstance(part, ReasoningPart) and part.redacted and part.payload
    # the server refuses redacted content it never sent: accepted, so sent back unchanged
    again = await turn(client=client(api), messages=first.messages, user_message="again")
    assert again.final_text == "Again."


async def test_a_changed_signature_is_the_api_s_400(api: BedrockServer) -> None:
    api.script(Turn([thought("plan"), use("Oslo", "t1")]))
    request = ModelRequest(system="", messages=[user_message("hi")], tools=[declaration()])
    events = await collect(client(api), request)
    (held,) = [e.part for e in events if isinstance(e, PartCompleted)]
    assert isinstance(held, ReasoningPart) and held.signature
    for forged in (
        ReasoningPart(provider="bedrock", text="another plan", signature=held.signature),
        ReasoningPart(provider="bedrock", text="plan", signature="AAAA" + held.signature),
    ):
        history: list[Message] = [
            user_message("hi"),
            AssistantMessage(parts=[forged, ToolCallPart(id="t1", name="weather", input={})]),
            tool_result("t1", "sunny", name="weather"),
        ]
        follow_up = ModelRequest(
            system="", messages=history, tools=[declaration()], retries=ONE_TRY
        )
        with pytest.raises(ModelHTTPError, match="Invalid `signature`") as rejected:
            await collect(client(api), follow_up)
        assert rejected.value.status == 400


async def test_reasoning_deltas_are_shown_apart_from_text(api: BedrockServer) -> None:
    api.script(Turn([thought("Hmm."), {"text": "Yes."}]))
    events = await collect(client(api), ModelRequest(system="", messages=[user_message("q")]))
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Hmm."


@pytest.mark.parametrize(
    ("model", "reasoning", "fields"),
    [
        (CLAUDE, "high", {"thinking": {"type": "enabled", "budget_tokens": 16384}}),
        (NOVA2, "xhigh", {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": "high"}}),
        (LLAMA, "high", None),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", "high", None),
    ],
)
async def test_reasoning_is_asked_for_in_each_family_s_words(
    api: BedrockServer, model: str, reasoning: str, fields: dict[str, Any] | None
) -> None:
    api.script(Turn([{"text": "ok"}]))
    request = ModelRequest(system="", messages=[user_message("q")], reasoning=reasoning)
    await collect(client(api, model), request)  # no 400: the server takes it
    assert api.bodies[0].get("additionalModelRequestFields") == fields


def test_adaptive_claude_gets_its_effort_in_output_config() -> None:
    request = ModelRequest(system="", messages=[user_message("q")], reasoning="medium")
    params = request_params("global.anthropic.claude-opus-4-7-v1:0", request)
    assert params["additionalModelRequestFields"] == {"thinking": {"type": "adaptive"}}
    assert params["outputConfig"] == {"effort": "medium"}


async def test_another_provider_s_history_keeps_its_calls_and_drops_its_reasoning(
    api: BedrockServer,
) -> None:
    api.script(Turn([{"text": "Sunny."}]))
    history = anthropic_tool_loop()
    await collect(client(api), ModelRequest(system="", messages=history, tools=[declaration()]))
    assert api.bodies[0]["messages"][1]["content"] == [
        {"toolUse": {"toolUseId": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}}
    ]


async def test_reasoning_is_off_for_a_step_answering_calls_made_without_it(
    api: BedrockServer,
) -> None:
    api.script(Turn([{"text": "Sunny."}]))
    history = anthropic_tool_loop()
    request = ModelRequest(system="", messages=history, tools=[declaration()], reasoning="high")
    await collect(client(api), request)  # the server refuses thinking on here
    assert "additionalModelRequestFields" not in api.bodies[0]
    assert api.bodies[0]["inferenceConfig"]["maxTokens"] == 4096


async def test_without_tools_declared_the_history_s_calls_go_as_text(api: BedrockServer) -> None:
    api.script(Turn([{"text": "Summary."}]))
    history: list[Message] = [
        user_message("weather?"),
        AssistantMessage(parts=[ToolCallPart(id="t1", name="weather", input={"city": "Oslo"})]),
        tool_result("t1", "sunny", name="weather"),
    ]
    await collect(client(api), ModelRequest(system="", messages=history))
    sent = api.bodies[0]["messages"]
    assert sent[1]["content"] == [{"text": '[called weather({"city": "Oslo"})]'}]
    assert sent[2]["content"][0] == {"text": "[result of weather]: sunny"}


async def test_a_llama_tool_result_goes_without_status(api: BedrockServer) -> None:
    api.script(Turn([use("Oslo", "t1")]), Turn([{"text": "Sunny."}]))
    result = await turn(client=client(api, LLAMA), tools=[live("weather", weather)])
    assert result.final_text == "Sunny."
    (answer,) = api.bodies[1]["messages"][2]["content"]
    assert "status" not in answer["toolResult"]


# --- caching, media, settings, stop reasons --------------------------------------------------


async def test_cache_points_write_then_read_the_prefix(api: BedrockServer) -> None:
    api.script(Turn([{"text": "Sunny."}]), Turn([{"text": "Still sunny."}]))
    cold, warm = await cold_then_warm(client(api))
    assert cold.usage.cache_write_tokens > 1000 and cold.usage.cache_read_tokens == 0
    assert warm.usage.cache_read_tokens == api.usages[1]["cacheReadInputTokens"] > 1000
    assert warm.usage.input_tokens == api.usages[1]["inputTokens"]
    body = api.bodies[1]
    assert body["system"][-1] == {"cachePoint": {"type": "default"}}
    users = [m for m in body["messages"] if m["role"] == "user"]
    assert all(m["content"][-1] == {"cachePoint": {"type": "default"}} for m in users)


async def test_models_without_caching_get_no_cache_points(api: BedrockServer) -> None:
    api.script(Turn([{"text": "ok"}]), Turn([{"text": "ok"}]))
    request = ModelRequest(system="s", messages=[user_message("q")], tools=[declaration()])
    await collect(client(api, LLAMA), request)  # the server refuses cache points on Llama
    assert "cachePoint" not in str(api.bodies[0])
    one_hour = ModelRequest(
        system="s", messages=[user_message("q")], prompt_cache=PromptCache(ttl="1h")
    )
    await collect(client(api, "amazon.nova-pro-v1:0"), one_hour)
    assert api.bodies[1]["system"][-1] == {"cachePoint": {"type": "default", "ttl": "1h"}}


async def test_images_and_documents_go_as_bytes_or_s3_locations(api: BedrockServer) -> None:
    api.script(Turn([{"text": "A cat."}]))
    image = ImagePart(media_type="image/png", data=b"\x89PNG")
    pdf = DocumentPart(
        media_type="application/pdf", url="s3://bucket/report.pdf", name="Q3: r&d.pdf"
    )
    text = DocumentPart(media_type="text/plain", data=b"notes")
    message = user_message("what?", [image, pdf, text])
    await collect(client(api), ModelRequest(system="", messages=[message]))
    content = api.bodies[0]["messages"][0]["content"]
    assert content[1] == {"image": {"format": "png", "source": {"bytes": "iVBORw=="}}}
    assert content[2]["document"] == {
        "format": "pdf",
        "name": "Q3 r d",
        "source": {"s3Location": {"uri": "s3://bucket/report.pdf"}},
    }
    assert content[3]["document"]["format"] == "txt"
    assert content[3]["document"]["name"].startswith("document-")


async def test_a_tool_s_image_goes_in_its_result(api: BedrockServer) -> None:
    api.script(Turn([{"text": "A chart."}]))
    chart = ImagePart(media_type="image/png", data=b"\x89PNG")
    history: list[Message] = [
        user_message("plot"),
        AssistantMessage(parts=[ToolCallPart(id="t1", name="weather", input={})]),
        tool_result("t1", "", name="weather", media=[chart]),
    ]
    await collect(client(api), ModelRequest(system="", messages=history, tools=[declaration()]))
    (answer,) = [b for b in api.bodies[0]["messages"][2]["content"] if "toolResult" in b]
    assert answer["toolResult"]["content"] == [
        {"image": {"format": "png", "source": {"bytes": "iVBORw=="}}}
    ]


async def test_an_http_image_url_is_refused_before_sending(api: BedrockServer) -> None:
    image = ImagePart(media_type="image/png", url="https://example.com/cat.png")
    request = ModelRequest(system="", messages=[user_message("what?", [image])])
    with pytest.raises(AttachmentUnsupported, match="s3://") as refused:
        await collect(client(api), request)
    assert refused.value.source == "https://example.com/cat.png" and api.requests == []


async def test_settings_become_inference_config_and_a_seed_is_refused(
    api: BedrockServer,
) -> None:
    api.script(Turn([{"text": "ok"}]))
    settings = ModelSettings(
        temperature=0.2,
        top_p=0.9,
        stop_sequences=["END"],
        extra={"additionalModelRequestFields": {"top_k": 5}},
    )
    await collect(
        client(api), ModelRequest(system="", messages=[user_message("q")], settings=settings)
    )
    body = api.bodies[0]
    assert body["inferenceConfig"] == {
        "maxTokens": 4096,
        "temperature": 0.2,
        "topP": 0.9,
        "stopSequences": ["END"],
    }
    assert body["additionalModelRequestFields"] == {"top_k": 5}
    seeded = ModelRequest(system="", messages=[user_message("q")], settings=ModelSettings(seed=1))
    with pytest.raises(ModelSettingUnsupported, match="seed"):
        await collect(client(api), seeded)


@pytest.mark.parametrize(
    ("stop", "expected"),
    [
        ("max_tokens", "max_tokens"),
        ("guardrail_intervened", "refusal"),
        ("content_filtered", "refusal"),
        ("model_context_window_exceeded", "max_tokens"),
        ("malformed_model_output", "other"),
    ],
)
async def test_stop_reasons_are_mapped(api: BedrockServer, stop: str, expected: str) -> None:
    api.script(Turn([{"text": "I can"}], stop=stop))
    done = (await collect(client(api), ModelRequest(system="", messages=[user_message("q")])))[-1]
    assert isinstance(done, Done)
    assert (done.stop_reason, done.provider_stop_reason) == (expected, stop)


# --- what the server refuses, shown on raw requests ------------------------------------------


def raw_client(api: BedrockServer) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=api.url,
        aws_access_key_id=api.key_id,
        aws_secret_access_key=api.secret,
        config=Config(retries={"total_max_attempts": 1}),
    )


def _user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def _assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


_TOOLS = {"tools": [{"toolSpec": {"name": "weather", "inputSchema": {"json": SCHEMA}}}]}
_RESULT = {"toolResult": {"toolUseId": "t1", "content": [{"text": "ok"}], "status": "success"}}


@pytest.mark.parametrize(
    ("model", "fields", "message"),
    [
        (
            CLAUDE,
            {"messages": [_assistant({"text": "a"}), _user({"text": "b"})]},
            "start with a user",
        ),
        (CLAUDE, {"messages": [_user({"text": "a"}), _user({"text": "b"})]}, "must alternate"),
        (CLAUDE, {"messages": [_user({"text": " "})]}, "is blank"),
        (
            CLAUDE,
            {
                "messages": [
                    _user({"text": "a"}),
                    _assistant(use("Oslo", "t1")),
                    _user({"text": "b"}),
                ],
                "toolConfig": _TOOLS,
            },
            "Expected toolResult blocks at messages.2.content for the following Ids: t1",
        ),
        (
            CLAUDE,
            {"messages": [_user({"text": "a"}), _assistant(use("Oslo", "t1")), _user(_RESULT)]},
            "toolConfig field must be defined",
        ),
        (
            LLAMA,
            {
                "messages": [_user({"text": "a"}), _assistant(use("Oslo", "t1")), _user(_RESULT)],
                "toolConfig": _TOOLS,
            },
            "toolResult.status",
        ),
        (
            CLAUDE,
            {"messages": [_user({"text": "a"}), _assistant(thought("plan")), _user({"text": "b"})]},
            "signature: Field required",
        ),
        (
            LLAMA,
            {
                "messages": [_user({"text": "a"})],
                "additionalModelRequestFields": {
                    "thinking": {"type": "enabled", "budget_tokens": 2048}
                },
            },
            "extraneous key [thinking]",
        ),
        (
            LLAMA,
            {"messages": [_user({"text": "a"}, {"cachePoint": {"type": "default"}})]},
            "does not support prompt caching",
        ),
        (
            CLAUDE,
            {
                "messages": [
                    _user({"text": "a"}),
                    _assistant(use("Oslo", "t1")),
                    _user(_RESULT),
                ],
                "toolConfig": _TOOLS,
                "inferenceConfig": {"maxTokens": 8000},
                "additionalModelRequestFields": {
                    "thinking": {"type": "enabled", "budget_tokens": 2048}
                },
            },
            "must start with a thinking block",
        ),
        (
            CLAUDE,
            {
                "messages": [
                    _user(
                        {"document": {"format": "txt", "name": "a.txt", "source": {"bytes": b"x"}}}
                    )
                ]
            },
            "document file name",
        ),
    ],
    ids=[
        "starts-with-user",
        "roles-alternate",
        "blank-text",
        "tool-pairing",
        "tool-config",
        "status-on-llama",
        "signature-required",
        "thinking-on-llama",
        "cache-on-llama",
        "thinking-loop-without-thinking",
        "document-name",
    ],
)
def test_the_server_refuses_what_the_api_refuses(
    api: BedrockServer, model: str, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ClientError) as refused:
        raw_client(api).converse_stream(modelId=model, **fields)
    error = refused.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Code"] == "ValidationException"
    assert message in error["Error"]["Message"]


def test_an_unsigned_request_is_refused(api: BedrockServer) -> None:
    import httpx

    answer = httpx.post(f"{api.url}/model/{CLAUDE}/converse-stream", json={"messages": []})
    assert answer.status_code == 403
    assert answer.headers["x-amzn-ErrorType"].startswith("MissingAuthenticationTokenException")
    forged = {"Authorization": "AWS4-HMAC-SHA256 Credential=x", "X-Amz-Date": "20260101T000000Z"}
    answer = httpx.post(f"{api.url}/model/{CLAUDE}/converse-stream", json={}, headers=forged)
    assert answer.status_code == 400 and "malformed" in answer.json()["message"]
