"""The Gemini adapter's pure parts: chunks to events, the request it builds, the thinking
table, and how ``google/`` and ``vertex/`` ids are chosen, priced and windowed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from eve._model_windows import known_window
from eve.costs import price
from eve.errors import (
    ModelConnectionError,
    ModelCredentialsMissing,
    ModelProtocolError,
    ModelSDKMissing,
    ServedModelUnavailable,
)
from eve.manifest import ModelSettings
from eve.messages import (
    AssistantMessage,
    ImagePart,
    Message,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    tool_result,
    user_message,
)
from eve.models.base import ModelRequest, ProviderToolDeclaration, ToolDeclaration
from eve.models.events import Done, ModelEvent, PartCompleted, TokenUsage, ToolCallEnd
from eve.models.gemini_models import max_output_tokens
from eve.models.gemini_request import request_config, request_contents
from eve.models.gemini_stream import translate_gemini_chunks
from eve.models.registry import choose_model, create_client

MODEL = "gemini-3-flash-preview"


def chunk(*parts: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], **extra}


def events(*chunks: dict[str, Any]) -> list[ModelEvent]:
    return list(translate_gemini_chunks("google", chunks))


def completed(found: list[ModelEvent]) -> list[Any]:
    return [
        e.part if isinstance(e, PartCompleted) else e
        for e in found
        if isinstance(e, PartCompleted | ToolCallEnd)
    ]


# --- chunks to events ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("finish", "calls", "expected"),
    [
        ("STOP", False, "end_turn"),
        ("STOP", True, "tool_use"),
        ("MAX_TOKENS", False, "max_tokens"),
        ("SAFETY", False, "refusal"),
        ("RECITATION", False, "refusal"),
        ("PROHIBITED_CONTENT", False, "refusal"),
        ("SPII", False, "refusal"),
        ("BLOCKLIST", False, "refusal"),
        ("MALFORMED_FUNCTION_CALL", False, "other"),
        ("SOMETHING_NEW", False, "other"),
    ],
)
def test_finish_reasons_map_to_eve_s_stop_reasons(finish: str, calls: bool, expected: str) -> None:
    parts = [{"functionCall": {"name": "f", "args": {}}}] if calls else [{"text": "x"}]
    done = events(chunk(*parts, finish=finish))[-1]
    assert isinstance(done, Done) and done.stop_reason == expected
    assert done.provider_stop_reason == (None if expected in ("end_turn", "tool_use") else finish)


def test_usage_splits_cached_tokens_out_of_the_prompt_and_adds_thoughts_to_output() -> None:
    metadata = {
        "promptTokenCount": 1000,
        "cachedContentTokenCount": 800,
        "toolUsePromptTokenCount": 5,
        "candidatesTokenCount": 20,
        "thoughtsTokenCount": 30,
    }
    done = events(chunk({"text": "x"}, finish="STOP", usageMetadata=metadata))[-1]
    assert isinstance(done, Done)
    assert done.usage == TokenUsage(
        input_tokens=205, output_tokens=50, cache_read_tokens=800, reasoning_tokens=30
    )


def test_runs_of_text_end_at_a_signature_or_a_change_of_kind() -> None:
    found = completed(
        events(
            chunk({"text": "Let me ", "thought": True}),
            chunk({"text": "think.", "thought": True, "thoughtSignature": "U0lH"}),
            chunk({"text": "One, "}),
            chunk({"text": "two.", "thoughtSignature": "U0lHMg=="}),
            chunk({"text": "Three."}, finish="STOP"),
        )
    )
    assert found == [
        ReasoningPart(provider="google", text="Let me think.", signature="U0lH"),
        ProviderPart(
            provider="google",
            block={"text": "One, two.", "thoughtSignature": "U0lHMg=="},
            text="One, two.",
            answer=True,
        ),
        TextPart(text="Three."),
    ]


def test_other_parts_are_kept_as_they_came_with_their_readable_text() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(2)"}}
    result = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}}
    found = completed(events(chunk(code), chunk(result, finish="STOP")))
    assert found == [
        ProviderPart(provider="google", block=code, text="print(2)"),
        ProviderPart(provider="google", block=result, text="2\n"),
    ]


@pytest.mark.parametrize(
    "part",
    [{"functionCall": {"args": {}}}, {"functionCall": {"name": "f", "args": [1]}}, "text"],
    ids=["no-name", "args-list", "not-an-object"],
)
def test_a_broken_part_is_a_protocol_error(part: Any) -> None:
    with pytest.raises(ModelProtocolError):
        events(chunk(part, finish="STOP"))


def test_a_stream_without_a_finish_reason_was_cut_off() -> None:
    with pytest.raises(ModelConnectionError, match="no finishReason"):
        events(chunk({"text": "par"}))


# --- the request -----------------------------------------------------------------------------


def test_another_provider_s_parts_are_dropped_or_become_text() -> None:
    history: list[Message] = [
        user_message("hi"),
        AssistantMessage(
            parts=[
                ReasoningPart(provider="anthropic", text="secret", signature="sig"),
                ProviderPart(provider="openai", block={"type": "web_search_call"}, text="found"),
                TextPart(text="Sunny."),
            ]
        ),
        user_message("thanks"),
    ]
    contents = request_contents("google", MODEL, ModelRequest(system="", messages=history))
    assert contents[1] == {"role": "model", "parts": [{"text": "found"}, {"text": "Sunny."}]}


def test_tool_results_answer_in_order_with_media_after_them() -> None:
    image = ImagePart(media_type="image/png", data=b"png")
    history: list[Message] = [
        user_message("go"),
        AssistantMessage(
            parts=[
                ToolCallPart(id="a", name="shot", input={}),
                ToolCallPart(id="b", name="fail", input={}),
            ]
        ),
        tool_result("a", "here", media=[image]),
        tool_result("b", "boom", is_error=True),
    ]
    contents = request_contents(
        "google", "gemini-2.5-flash", ModelRequest(system="", messages=history)
    )
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "shot", "response": {"output": "here"}, "id": "a"}},
        {"functionResponse": {"name": "fail", "response": {"error": "boom"}, "id": "b"}},
        {"inlineData": {"mimeType": "image/png", "data": "cG5n"}},
    ]
    # a 2.5 model validates no signature on calls it did not make: no placeholder
    assert all("thoughtSignature" not in p for p in contents[1]["parts"])


def test_settings_tools_and_provider_tools_become_the_config() -> None:
    request = ModelRequest(
        system="Be brief.",
        messages=[user_message("hi")],
        tools=[ToolDeclaration(name="f", description="d", input_schema={"type": "object"})],
        provider_tools=[
            ProviderToolDeclaration(name="search", provider="google", type="googleSearch"),
            ProviderToolDeclaration(name="ws", provider="anthropic", type="web_search_20250305"),
        ],
        settings=ModelSettings(temperature=0.2, top_p=0.9, stop_sequences=["END"], seed=7),
        max_output_tokens=100,
    )
    config = request_config("google", MODEL, request)
    assert config["tools"] == [
        {
            "functionDeclarations": [
                {"name": "f", "description": "d", "parametersJsonSchema": {"type": "object"}}
            ]
        },
        {"googleSearch": {}},
    ]
    assert (config["temperature"], config["topP"], config["stopSequences"], config["seed"]) == (
        0.2,
        0.9,
        ["END"],
        7,
    )
    assert config["maxOutputTokens"] == 100 + 8192
    assert config["systemInstruction"] == {"role": "user", "parts": [{"text": "Be brief."}]}


@pytest.mark.parametrize(
    ("model", "asked", "reasoning", "expected"),
    [
        ("gemini-2.0-flash", 4096, "high", 4096),
        ("gemini-2.5-flash", 4096, "none", 4096),
        ("gemini-2.5-flash", 4096, "low", 4096 + 2048),
        ("gemini-3-pro-preview", 60_000, "xhigh", 65_536),
        ("gemini-3-pro-preview", 70_000, "low", 70_000),
    ],
)
def test_thoughts_get_room_in_the_output_limit(
    model: str, asked: int, reasoning: str, expected: int
) -> None:
    assert max_output_tokens(model, asked, reasoning) == expected


def test_an_explicit_cache_holds_the_system_and_tools_so_they_are_left_out() -> None:
    request = ModelRequest(
        system="long",
        messages=[user_message("hi")],
        tools=[ToolDeclaration(name="f", description="d", input_schema={"type": "object"})],
        settings=ModelSettings(extra={"cachedContent": "cachedContents/abc"}),
    )
    config = request_config("google", MODEL, request)
    assert config["cachedContent"] == "cachedContents/abc"
    assert "systemInstruction" not in config and "tools" not in config


def test_retry_info_durations() -> None:
    # eve.models.gemini imports google.genai (~0.23 CPU-s); every xdist worker collects this
    # module, most never run it, so the SDK is imported where a test first needs it.
    from eve.models.gemini import retry_delay

    detail = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"}
    assert retry_delay({"error": {"details": [{"@type": "x"}, detail]}}) == 34.4
    assert retry_delay({"error": {"details": [{**detail, "retryDelay": "soon"}]}}) is None
    assert retry_delay("not json") is None


# --- ids, credentials, prices and windows ----------------------------------------------------


def test_google_and_vertex_ids_build_gemini_clients(tmp_path: Path) -> None:
    google = create_client(
        "google/gemini-2.5-flash", app_root=tmp_path, env={"GOOGLE_API_KEY": "k"}
    )
    from eve.models.gemini import GeminiModel

    assert isinstance(google, GeminiModel) and google.model_id == "google/gemini-2.5-flash"
    vertex = create_client(
        "vertex/gemini-2.5-pro", app_root=tmp_path, env={"GOOGLE_CLOUD_PROJECT": "p"}
    )
    assert vertex.model_id == "vertex/gemini-2.5-pro"


@pytest.mark.parametrize(
    ("model", "variable"), [("google/g", "GEMINI_API_KEY"), ("vertex/g", "GOOGLE_CLOUD_PROJECT")]
)
def test_missing_credentials_are_named(tmp_path: Path, model: str, variable: str) -> None:
    with pytest.raises(ModelCredentialsMissing) as missing:
        create_client(model, app_root=tmp_path, env={})
    assert missing.value.variable == variable
    with pytest.raises(ServedModelUnavailable, match=variable):
        choose_model(model, app_root=tmp_path, env={}, fallback=False)
    choice = choose_model(model, app_root=tmp_path, env={})
    assert choice.client.model_id == "offline/test" and variable in (choice.notice or "")


def test_without_the_sdk_the_error_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "eve.models.gemini", raising=False)
    monkeypatch.setitem(sys.modules, "google.genai", None)
    with pytest.raises(ModelSDKMissing, match=r"eve-durable\[google\]") as missing:
        create_client("google/gemini-2.5-flash", app_root=tmp_path, env={"GEMINI_API_KEY": "k"})
    assert (missing.value.package, missing.value.extra) == ("google-genai", "google")


def test_gemini_is_priced_and_windowed() -> None:
    usage = TokenUsage(input_tokens=1000, output_tokens=100, cache_read_tokens=1000)
    for model in ("google/gemini-2.5-flash", "vertex/gemini-2.5-pro"):
        assert price(model, usage).usd is not None
        window = known_window(model)
        assert window is not None and window.tokens == 1_048_576
    assert known_window("google/gemini-3-pro-preview") is not None
