"""The Gemini adapter against a server that keeps the Gemini API's rules (gemini_server).

Real ``google-genai`` SDK, real HTTP: streaming, parallel calls with thought signatures sent
back on their parts (also from a replayed step), thinking levels and budgets, implicit cache
usage, media, structured output, safety, and the failures the API answers with.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from eve.errors import ModelAuthError, ModelConnectionError, ModelHTTPError, ModelRateLimited
from eve.manifest import ModelSettings, Retries
from eve.messages import (
    AssistantMessage,
    AssistantPart,
    DocumentPart,
    ImagePart,
    Message,
    ProviderPart,
    ReasoningPart,
    ToolCallPart,
    tool_result,
    user_message,
)
from eve.models.base import ModelRequest, ToolDeclaration
from eve.models.events import (
    Done,
    ModelEvent,
    PartCompleted,
    ReasoningDelta,
    Retrying,
    TextDelta,
)
from eve.models.gemini_request import request_contents
from eve.tools import tool
from tests.execution.helpers import live, turn
from tests.models.gemini_server import (
    GeminiServer,
    Turn,
    anthropic_tool_loop,
    cold_then_warm,
    prompt_blocked,
    quota_exhausted,
    replayed_message,
    sse,
    unavailable,
)

if TYPE_CHECKING:
    from eve.models.gemini import GeminiModel

KEY = "AIza-test-gemini-rules"
FLASH3 = "gemini-3-flash-preview"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@pytest.fixture
def api() -> Iterator[GeminiServer]:
    with GeminiServer(KEY) as running:
        yield running


def client(api: GeminiServer, model: str = FLASH3) -> GeminiModel:
    # eve.models.gemini imports google.genai (~0.23 CPU-s); every xdist worker collects this
    # module, most never run it, so the SDK is imported where a test first needs it.
    from eve.models.gemini import gemini_model

    return gemini_model("google", model, {"GEMINI_API_KEY": KEY, "GOOGLE_GEMINI_BASE_URL": api.url})


@tool
def weather(city: str) -> str:
    """Weather by city."""
    return f"sunny in {city}"


def call(city: str, call_id: str | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": "weather", "args": {"city": city}}
    if call_id:
        function["id"] = call_id
    return {"functionCall": function}


async def collect(model: GeminiModel, request: ModelRequest) -> list[ModelEvent]:
    return [event async for event in model.stream(request)]


def sent(api: GeminiServer, n: int) -> dict[str, Any]:
    return api.bodies[n]


def ask(text: str = "hi", **fields: Any) -> ModelRequest:
    return ModelRequest(system="Be brief.", messages=[user_message(text)], **fields)


# --- streaming and the request ---------------------------------------------------------------


async def test_text_streams_in_pieces_and_ends_as_one_signed_part(api: GeminiServer) -> None:
    api.script(Turn([{"text": "Sunny in Oslo."}], output_tokens=4))
    events = await collect(client(api), ask())
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Sunny i", "n Oslo."]
    (completed,) = [e.part for e in events if isinstance(e, PartCompleted)]
    # Gemini 3 signs the last part of a response without calls; it goes back as it came
    assert isinstance(completed, ProviderPart) and completed.answer
    assert completed.text == "Sunny in Oslo." and completed.block["thoughtSignature"]
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason == "end_turn"
    assert done.usage.output_tokens == 4 and done.usage.input_tokens > 0
    body = sent(api, 0)
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    # thoughts count toward the limit: the default thinking's headroom is added to 4,096
    assert body["generationConfig"]["maxOutputTokens"] == 4096 + 8192
    assert f"/models/{FLASH3}:streamGenerateContent" in api.requests[0].path


async def test_parallel_calls_go_back_signed_and_answered_in_order(api: GeminiServer) -> None:
    api.script(
        Turn([{"text": "Checking both."}, call("Oslo", "c1"), call("Rome", "c2")]),
        Turn([{"text": "Sunny in both."}]),
        Turn([{"text": "You are welcome."}]),
    )
    result = await turn(client=client(api), tools=[live("weather", weather)])
    assert result.final_text == "Sunny in both."
    model_turn, answers = sent(api, 1)["contents"][1:3]
    assert [list(p) for p in model_turn["parts"]] == [
        ["text"],
        ["functionCall", "thoughtSignature"],
        ["functionCall"],
    ]
    assert [p["functionResponse"]["id"] for p in answers["parts"]] == ["c1", "c2"]
    assert answers["parts"][0]["functionResponse"]["response"] == {"output": "sunny in Oslo"}
    # the next user turn: the whole history, signatures and all, is accepted again
    await turn(client=client(api), messages=result.messages, user_message="thanks")
    assert len(api.requests) == 3


async def test_a_call_without_an_id_gets_one_that_is_never_sent(api: GeminiServer) -> None:
    api.script(Turn([call("Oslo")]), Turn([{"text": "Sunny."}]))
    result = await turn(client=client(api), tools=[live("weather", weather)])
    assert result.final_text == "Sunny."
    sent_back = sent(api, 1)["contents"]
    assert "id" not in sent_back[1]["parts"][0]["functionCall"]
    assert "id" not in sent_back[2]["parts"][0]["functionResponse"]


async def test_a_changed_signature_is_the_api_s_400(api: GeminiServer) -> None:
    api.script(Turn([call("Oslo", "c1")]))
    events = await collect(client(api), ask(tools=[weather_declaration()]))
    parts: list[AssistantPart] = [e.part for e in events if isinstance(e, PartCompleted)]
    (held,) = parts
    assert isinstance(held, ReasoningPart) and held.item_id == "c1" and held.signature
    forged = ReasoningPart(provider="google", signature="AAAA" + held.signature, item_id="c1")
    history: list[Message] = [
        user_message("hi"),
        AssistantMessage(
            parts=[forged, ToolCallPart(id="c1", name="weather", input={"city": "Oslo"})]
        ),
        tool_result("c1", "sunny", name="weather"),
    ]
    request = ModelRequest(system="", messages=history, retries=Retries(attempts=1))
    with pytest.raises(ModelHTTPError, match="Corrupted thought signature") as rejected:
        await collect(client(api), request)
    assert rejected.value.status == 400


def test_the_server_refuses_a_gemini_3_call_without_its_signature(api: GeminiServer) -> None:
    # the rule eve's placeholder exists for, shown on a raw request
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [call("Oslo")]},
            {"role": "user", "parts": [{"functionResponse": {"name": "weather", "response": {}}}]},
        ]
    }
    url = f"{api.url}/v1beta/models/{FLASH3}:streamGenerateContent?alt=sse"
    answer = httpx.post(url, json=body, headers={"x-goog-api-key": KEY})
    assert answer.status_code == 400
    assert "missing a thought_signature" in answer.json()["error"]["message"]


def _user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def _answer(name: str) -> dict[str, Any]:
    return {"functionResponse": {"name": name, "response": {"output": "ok"}}}


@pytest.mark.parametrize(
    ("model", "body", "message"),
    [
        (FLASH3, {"contents": [_user({"text": "a"}), _user({"text": "b"})]}, "alternate"),
        (
            "gemini-2.5-flash",
            {
                "contents": [
                    _user({"text": "a"}),
                    {"role": "model", "parts": [call("Oslo"), call("Rome")]},
                    _user(_answer("weather")),
                ]
            },
            "number of function response parts",
        ),
        (
            "gemini-2.5-flash",
            {
                "contents": [_user({"text": "a"})],
                "generationConfig": {"thinkingConfig": {"thinkingLevel": "HIGH"}},
            },
            "Thinking level",
        ),
        (
            "gemini-2.5-pro",
            {
                "contents": [_user({"text": "a"})],
                "generationConfig": {"thinkingConfig": {"thinkingBudget": 0}},
            },
            "thinking budget 0 is invalid",
        ),
    ],
    ids=["roles", "pairing", "level-on-2.5", "pro-cannot-stop-thinking"],
)
def test_the_server_refuses_what_the_api_refuses(
    api: GeminiServer, model: str, body: dict[str, Any], message: str
) -> None:
    url = f"{api.url}/v1beta/models/{model}:streamGenerateContent?alt=sse"
    answer = httpx.post(url, json=body, headers={"x-goog-api-key": KEY})
    assert answer.status_code == 400
    assert message in answer.json()["error"]["message"]


async def test_another_provider_s_calls_get_the_placeholder_signature(api: GeminiServer) -> None:
    api.script(Turn([{"text": "Sunny."}]))
    history = anthropic_tool_loop()
    await collect(client(api), ModelRequest(system="", messages=history))
    model_turn = sent(api, 0)["contents"][1]["parts"]
    assert model_turn == [
        {
            "functionCall": {"name": "weather", "args": {"city": "Oslo"}, "id": "toolu_1"},
            "thoughtSignature": "skip_thought_signature_validator",
        }
    ]


def weather_declaration() -> ToolDeclaration:
    return ToolDeclaration(name="weather", description="Weather by city.", input_schema=SCHEMA)


# --- thinking --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "reasoning", "expected"),
    [
        (FLASH3, "medium", {"thinkingLevel": "MEDIUM", "includeThoughts": True}),
        ("gemini-3-pro-preview", "medium", {"thinkingLevel": "HIGH", "includeThoughts": True}),
        ("gemini-3-pro-preview", "none", {"thinkingLevel": "LOW"}),
        ("gemini-2.5-flash", "low", {"thinkingBudget": 2048, "includeThoughts": True}),
        ("gemini-2.5-flash", "none", {"thinkingBudget": 0}),
        ("gemini-2.5-pro", "none", {"thinkingBudget": 128}),
        ("gemini-2.5-flash", "xhigh", {"thinkingBudget": 24576, "includeThoughts": True}),
    ],
)
async def test_reasoning_becomes_each_model_s_thinking_config(
    api: GeminiServer, model: str, reasoning: str, expected: dict[str, Any]
) -> None:
    api.script(Turn([{"text": "ok"}]))
    await collect(client(api, model), ask(reasoning=reasoning))  # no 400: the server accepts it
    assert sent(api, 0)["generationConfig"]["thinkingConfig"] == expected


async def test_thoughts_stream_as_reasoning_and_go_back_with_their_signatures(
    api: GeminiServer,
) -> None:
    thought = {"text": "Oslo first, then answer.", "thought": True}
    api.script(
        Turn([thought, call("Oslo", "c1")], thoughts_tokens=7),
        Turn([{"text": "Sunny."}]),
    )
    result = await turn(
        client=client(api, "gemini-2.5-flash"), tools=[live("weather", weather)], reasoning="low"
    )
    assert result.final_text == "Sunny."
    assistant = result.messages[1]
    assert isinstance(assistant, AssistantMessage)
    reasoning = assistant.parts[0]
    assert isinstance(reasoning, ReasoningPart) and reasoning.text == thought["text"]
    resent = sent(api, 1)["contents"][1]["parts"]
    assert [sorted(p) for p in resent] == [
        ["text", "thought", "thoughtSignature"],
        ["functionCall", "thoughtSignature"],
    ]
    assert api.usages[0]["thoughtsTokenCount"] == 7


async def test_reasoning_deltas_are_shown_apart_from_text(api: GeminiServer) -> None:
    api.script(Turn([{"text": "Hmm.", "thought": True}, {"text": "Yes."}]))
    events = await collect(client(api), ask(reasoning="low"))
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Hmm."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Yes."


# --- a replayed step -------------------------------------------------------------------------


async def test_a_replayed_step_sends_the_same_contents(api: GeminiServer) -> None:
    api.script(Turn([{"text": "Plan.", "thought": True}, call("Oslo", "c1"), call("Rome", "c2")]))
    events = await collect(client(api), ask(tools=[weather_declaration()], reasoning="low"))
    original, replayed = replayed_message(events)

    def contents(message: AssistantMessage) -> list[dict[str, Any]]:
        history: list[Message] = [
            user_message("go"),
            message,
            tool_result("c1", "sunny", name="weather"),
            tool_result("c2", "rainy", name="weather"),
        ]
        return request_contents("google", FLASH3, ModelRequest(system="", messages=history))

    assert contents(replayed) == contents(original)
    assert "thoughtSignature" in contents(replayed)[1]["parts"][1]


# --- usage, media, structured output ----------------------------------------------------------


async def test_an_implicitly_cached_prefix_is_reported_as_cache_reads(api: GeminiServer) -> None:
    api.script(Turn([{"text": "Sunny."}]), Turn([{"text": "Still sunny."}]))
    cold, warm = await cold_then_warm(client(api))
    assert cold.usage.cache_read_tokens == 0
    assert warm.usage.cache_read_tokens == api.usages[1]["cachedContentTokenCount"] > 1000
    assert (
        warm.usage.input_tokens == api.usages[1]["promptTokenCount"] - warm.usage.cache_read_tokens
    )


async def test_an_explicit_cache_is_read_and_the_system_and_tools_stay_in_it(
    api: GeminiServer,
) -> None:
    api.caches["cachedContents/weather"] = 5000
    api.script(Turn([{"text": "Sunny."}]))
    extra = {"cachedContent": "cachedContents/weather"}
    request = ask(settings=ModelSettings(extra=extra), tools=[weather_declaration()])
    done = (await collect(client(api), request))[-1]
    assert isinstance(done, Done) and done.usage.cache_read_tokens == 5000
    assert done.usage.input_tokens == api.usages[0]["promptTokenCount"] - 5000
    extra = {"cachedContent": "cachedContents/gone"}
    with pytest.raises(ModelAuthError, match="CachedContent not found"):
        await collect(
            client(api), ask(settings=ModelSettings(extra=extra), retries=Retries(attempts=1))
        )


async def test_images_and_documents_go_as_inline_or_file_data(api: GeminiServer) -> None:
    api.script(Turn([{"text": "A cat."}]))
    image = ImagePart(media_type="image/png", data=b"\x89PNG")
    pdf = DocumentPart(media_type="application/pdf", url="gs://bucket/report.pdf")
    await collect(
        client(api), ModelRequest(system="", messages=[user_message("what?", [image, pdf])])
    )
    assert sent(api, 0)["contents"][0]["parts"] == [
        {"text": "what?"},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}},
        {"fileData": {"fileUri": "gs://bucket/report.pdf", "mimeType": "application/pdf"}},
    ]


async def test_an_image_out_is_kept_and_sent_back_as_it_came(api: GeminiServer) -> None:
    picture = {"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}}
    api.script(Turn([{"text": "Here:"}, picture]), Turn([{"text": "Done."}]))
    model = client(api, "gemini-2.5-flash-image")
    first = await turn(client=model)
    assistant = first.messages[1]
    assert isinstance(assistant, AssistantMessage)
    assert any(isinstance(p, ProviderPart) and "inlineData" in p.block for p in assistant.parts)
    await turn(client=model, messages=first.messages, user_message="again")
    assert picture["inlineData"] in [
        p.get("inlineData") for p in sent(api, 1)["contents"][1]["parts"]
    ]


async def test_structured_output_is_native_on_gemini_3(api: GeminiServer) -> None:
    assert client(api).structured_output is True
    assert client(api, "gemini-2.5-flash").structured_output is False
    api.script(Turn([{"text": '{"city": "Oslo"}'}]))
    await collect(client(api), ask(output_schema=SCHEMA, tools=[weather_declaration()]))
    config = sent(api, 0)["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == SCHEMA


# --- safety and failures ---------------------------------------------------------------------


async def test_safety_finish_and_a_blocked_prompt_are_refusals(api: GeminiServer) -> None:
    ratings = {
        "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}]
    }
    api.script(Turn([{"text": "I can"}], finish="SAFETY", extra=ratings), prompt_blocked())
    first = await collect(client(api), ask())
    blocked = await collect(client(api), ask())
    assert [e.stop_reason for e in (first[-1], blocked[-1]) if isinstance(e, Done)] == [
        "refusal",
        "refusal",
    ]
    done = first[-1]
    assert isinstance(done, Done) and done.provider_stop_reason == "SAFETY"


async def test_quota_and_overload_map_to_eve_s_errors(api: GeminiServer) -> None:
    api.script(quota_exhausted(7), unavailable())
    request = ask(retries=Retries(attempts=1))
    with pytest.raises(ModelRateLimited) as limited:
        await collect(client(api), request)
    assert limited.value.retry_after == 7.0
    assert "RESOURCE_EXHAUSTED" in str(limited.value) and KEY not in str(limited.value)
    with pytest.raises(ModelHTTPError) as busy:
        await collect(client(api), request)
    assert busy.value.status == 503


async def test_a_429_is_retried_after_the_retry_info_delay(api: GeminiServer) -> None:
    api.script(quota_exhausted(0.01), unavailable(), Turn([{"text": "ok"}]))
    events = await collect(client(api), ask(retries=Retries(attempts=3, max_delay_seconds=0.05)))
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [r.delay for r in retries][:1] == [0.01] and len(retries) == 2
    assert isinstance(events[-1], Done) and events[-1].stop_reason == "end_turn"


async def test_a_stream_cut_before_its_finish_reason_is_a_connection_error(
    api: GeminiServer,
) -> None:
    chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": "par"}]}}]}
    api.script(sse([chunk]))
    with pytest.raises(ModelConnectionError, match="no finishReason"):
        await collect(client(api), ask(retries=Retries(attempts=1)))


async def test_vertex_express_mode_reaches_the_publisher_path(api: GeminiServer) -> None:
    api.script(Turn([{"text": "ok"}]))
    env = {"GOOGLE_API_KEY": KEY, "GOOGLE_VERTEX_BASE_URL": api.url}
    from eve.models.gemini import gemini_model

    model = gemini_model("vertex", FLASH3, env)
    assert model.model_id == f"vertex/{FLASH3}"
    events = await collect(model, ask())
    assert isinstance(events[-1], Done)
    assert api.requests[0].path.startswith(f"/v1beta1/publishers/google/models/{FLASH3}:")
