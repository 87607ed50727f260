"""The loopback OpenAI refuses what OpenAI refuses (the rules the adapter tests rely on)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.models.openai_rules import Produced, check_chat, check_responses

CALL = {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "ok"}
USER = {"role": "user", "content": "hi"}


def responses(*items: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "gpt-5", "input": list(items), "store": False, **fields}


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (responses(USER, {"type": "thought"}), "Invalid value: 'thought'"),
        (
            responses(USER, OUTPUT),
            "No tool call found for function call output with call_id call_1",
        ),
        (responses(USER, CALL), "No tool output found for function call call_1"),
        (
            responses(USER, {"type": "reasoning", "id": "rs_9", "summary": []}, CALL, OUTPUT),
            "Items are not persisted when `store` is set to false",
        ),
        (
            responses(USER, include=["reasoning.everything"]),
            "Invalid value: 'reasoning.everything'",
        ),
        (
            {"model": "gpt-4.1", "input": [USER], "include": ["reasoning.encrypted_content"]},
            "Encrypted content is not supported with this model",
        ),
        (
            responses(
                USER,
                tools=[
                    {
                        "type": "function",
                        "name": "f",
                        "parameters": {"type": "object", "properties": {}},
                    }
                ],
            ),
            "'additionalProperties' is required to be supplied and to be false",
        ),
        (
            responses(
                USER,
                text={
                    "format": {
                        "type": "json_schema",
                        "name": "a",
                        "strict": True,
                        "schema": {
                            "type": "object",
                            "properties": {"x": {}},
                            "additionalProperties": False,
                        },
                    }
                },
            ),
            "Missing 'x'",
        ),
        (
            responses({"role": "user", "content": [{"type": "input_file", "file_data": "data:,"}]}),
            "filename",
        ),
        (responses(USER, max_output_tokens=8), "Expected a value >= 16"),
    ],
)
def test_responses_rules(body: dict[str, Any], says: str) -> None:
    refusal = check_responses(body, Produced())
    assert refusal is not None and says in refusal.message


def test_a_call_answered_in_order_passes_and_stored_reasoning_needs_no_content() -> None:
    assert check_responses(responses(USER, CALL, OUTPUT), Produced()) is None
    stored = responses(USER, {"type": "reasoning", "id": "rs_1", "summary": []}, CALL, OUTPUT)
    assert check_responses({**stored, "store": True}, Produced()) is None


def chat(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "gpt-test", "messages": list(messages), **fields}


ASKS = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    ],
}
TOOL = {"role": "tool", "tool_call_id": "call_1", "content": "ok"}
CHAT_USER = {"role": "user", "content": "hi"}


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (chat(CHAT_USER, TOOL), "must be a response to a preceeding message with 'tool_calls'"),
        (chat(CHAT_USER, ASKS, CHAT_USER), "did not have response messages: call_1"),
        (
            chat(
                CHAT_USER,
                ASKS,
                {**TOOL, "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
            ),
            "Invalid value: 'image_url'",
        ),
        (
            chat(CHAT_USER, model="gpt-5.4", tools=[{"type": "function"}], reasoning_effort="low"),
            "Function tools with reasoning_effort are not supported for gpt-5.4",
        ),
        (chat(CHAT_USER, model="o3", max_tokens=100), "Use 'max_completion_tokens' instead"),
        (
            chat(
                CHAT_USER,
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": "a", "strict": True, "schema": {"type": "object"}},
                },
            ),
            "'additionalProperties' is required",
        ),
    ],
)
def test_chat_completions_rules(body: dict[str, Any], says: str) -> None:
    refusal = check_chat(body)
    assert refusal is not None and says in refusal.message


def test_tools_with_effort_none_and_answered_calls_pass() -> None:
    body = chat(
        CHAT_USER,
        ASKS,
        TOOL,
        model="gpt-5.4",
        tools=[{"type": "function"}],
        reasoning_effort="none",
    )
    assert check_chat(body) is None
