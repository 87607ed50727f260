"""Real recorded provider streams (tests/models/recorded, see its README for sources and
licence) replayed through each adapter and its SDK over the loopback server: the parts eve
records, the stop reason, the usage, and the next request built from them (issue 32)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eve.execution.response import ResponseParts
from eve.manifest import Retries
from eve.messages import AssistantMessage, Message, ProviderPart, TextPart, user_message
from eve.models.anthropic import AnthropicModel
from eve.models.base import ModelClient, ModelRequest
from eve.models.events import (
    Done,
    PartCompleted,
    ReasoningDelta,
    TextDelta,
    TokenUsage,
    ToolCallEnd,
)
from eve.models.openai import OpenAIModel
from tests.models.openai_script import chunk, text
from tests.models.sse_server import ScriptedServer, anthropic_sse, openai_sse

RECORDED = Path(__file__).parent / "recorded"
KEY = "sk-test-recorded-0123456789"


def recorded(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (RECORDED / name).read_text().splitlines() if line]


class Replayed:
    """One response as the loop assembles it: its parts, reasoning shown, and its Done."""

    def __init__(self) -> None:
        self.parts = ResponseParts()
        self.reasoning: list[str] = []

    async def run(self, client: ModelClient, messages: list[Message]) -> Done:
        request = ModelRequest(system="", messages=messages, retries=Retries(attempts=1))
        async for event in client.stream(request):
            match event:
                case TextDelta():
                    self.parts.add_text(event.text)
                case ReasoningDelta():
                    self.reasoning.append(event.text)
                case PartCompleted():
                    self.parts.add_part(event)
                case ToolCallEnd():
                    self.parts.add_call(event)
                case Done():
                    self.parts.done = event
        assert self.parts.done is not None
        return self.parts.done

    def message(self) -> AssistantMessage:
        return AssistantMessage(parts=self.parts.parts())


async def test_mistral_thinking_chunks_are_reasoning_and_text_and_none_goes_back() -> None:
    ask = user_message("What is 17 * 23?")
    with ScriptedServer(
        openai_sse(recorded("mistral-thinking.chunks.jsonl")),
        openai_sse([text("ok"), chunk(finish="stop")]),
    ) as server:
        client = OpenAIModel("mistral-small-latest", api_key=KEY, base_url=server.url)
        replayed = Replayed()
        done = await replayed.run(client, [ask])
        assert "".join(replayed.reasoning) == "Okay, the user is asking for the product this1."
        assert replayed.message().parts == [TextPart(text="391")]
        assert done == Done(
            stop_reason="end_turn", usage=TokenUsage(input_tokens=28, output_tokens=139)
        )
        await Replayed().run(client, [ask, replayed.message(), user_message("thanks")])
    # Chat Completions takes no reasoning back: the answer goes back as its text alone
    assert server.requests[1].body["messages"][1] == {"role": "assistant", "content": "391"}


async def test_responses_phase_and_ids_are_kept_and_sent_back() -> None:
    events = recorded("openai-phase.events.jsonl")
    with ScriptedServer(anthropic_sse(events), anthropic_sse(events)) as server:
        # Responses events are named by type, the framing anthropic_sse writes
        client = OpenAIModel("gpt-5.3-codex", api_key=KEY, base_url=server.url, api="responses")
        replayed = Replayed()
        done = await replayed.run(client, [user_message("Capital of France?")])
        parts = replayed.message().parts
        assert [p.block["phase"] for p in parts if isinstance(p, ProviderPart)] == [
            "commentary",
            "final_answer",
        ]
        assert (
            replayed.message().text == "I'm going to search for thatThe capital of France is Paris."
        )
        assert done == Done(
            stop_reason="end_turn",
            usage=TokenUsage(input_tokens=50, output_tokens=100, reasoning_tokens=20),
        )
        history = [user_message("Capital of France?"), replayed.message(), user_message("And?")]
        await Replayed().run(client, history)
    sent = server.requests[1].body["input"][1:3]
    assert [(i["id"], i["phase"], i["content"][0]["text"]) for i in sent] == [
        ("msg_phase_commentary", "commentary", "I'm going to search for that"),
        ("msg_phase_final", "final_answer", "The capital of France is Paris."),
    ]


async def test_anthropic_compaction_block_is_kept_whole_and_sent_back() -> None:
    events = recorded("anthropic-compaction.events.jsonl")
    summary = events[3]["delta"]["content"]
    with ScriptedServer(anthropic_sse(events), anthropic_sse(events)) as server:
        client = AnthropicModel("claude-opus-4-6", api_key=KEY, base_url=server.url)
        replayed = Replayed()
        done = await replayed.run(client, [user_message("Summarize the algorithms.")])
        compaction = ProviderPart(
            provider="anthropic", block={"type": "compaction", "content": summary}, text=summary
        )
        assert replayed.message().parts == [
            compaction,
            TextPart(text="Based on the conversation history"),
        ]
        assert done == Done(
            stop_reason="end_turn", usage=TokenUsage(input_tokens=612, output_tokens=2819)
        )
        history = [user_message("Summarize."), replayed.message(), user_message("More?")]
        await Replayed().run(client, history)
    assistant = server.requests[1].body["messages"][1]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "compaction", "content": summary},
            {"type": "text", "text": "Based on the conversation history"},
        ],
    }
