"""A local model (an OpenAI-compatible server, configured as llama.cpp's would be): the
real OpenAI SDK against a loopback server. Windows follow the model that runs, output is
bounded by them, cut answers are reported, window errors say what to set, and token
limits count every input token."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from eve.errors import (
    EmptyModelResponse,
    ModelContextWindowExceeded,
    OutputTruncated,
    SessionLimitReached,
)
from eve.events import SessionEvent, TurnCompleted
from eve.execution import RunResult, TurnEnvironment, agent_setup, run_agent
from eve.execution.setup import AgentSetup
from eve.execution.turn_config import MIN_OUTPUT_TOKENS, compaction_policy, output_tokens
from eve.manifest import (
    ROOT_NODE_ID,
    AgentConfig,
    Compaction,
    ContextWindow,
    Limits,
    ModelPrice,
    ModelSettings,
    Retries,
)
from eve.messages import Message, user_message
from eve.models.base import DEFAULT_MAX_OUTPUT_TOKENS, ModelClient
from eve.models.openai import OpenAIModel
from eve.runtime import ResolvedAgent
from tests.models.openai_script import chunk, text
from tests.models.sse_server import ScriptedServer, json_reply, openai_sse

#: llama.cpp reports the prompt it kept in its KV cache as ``cached_tokens``
MOSTLY_CACHED = {
    "prompt_tokens": 1000,
    "completion_tokens": 4,
    "total_tokens": 1004,
    "prompt_tokens_details": {"cached_tokens": 990},
}
GPT_4O = ContextWindow(tokens=128_000, max_output_tokens=16_384, source="model-table")


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


def local(server: ScriptedServer, name: str = "smollm2") -> OpenAIModel:
    # no key: a local server takes none (eve sends a placeholder)
    return OpenAIModel(name, api_key=None, base_url=f"{server.url}/v1")


def setup_of(client: ModelClient, **config: Any) -> AgentSetup:
    agent_config = AgentConfig(retries=Retries(attempts=1), **config)
    agent = ResolvedAgent(node_id=ROOT_NODE_ID, config=agent_config, instructions="Be brief.")
    return AgentSetup(agent=agent, client=client)


def answer(words: str, *, finish: str = "stop", usage: dict[str, Any] | None = None) -> Any:
    counts = usage or {"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24}
    final = {**chunk(finish=finish), "usage": counts}
    return openai_sse([text(words), final])


async def run(setup: AgentSetup, **env: Any) -> tuple[RunResult, list[SessionEvent]]:
    events: list[SessionEvent] = []
    result = await run_agent(setup, "hi", env=TurnEnvironment(on_event=events.append, **env))
    return result, events


def test_an_override_is_measured_against_its_own_window_not_the_configured_one(
    server: ScriptedServer,
) -> None:
    configured = {
        "model": "openai/gpt-4o",
        "context_window": GPT_4O,
        "compaction": Compaction(threshold_percent=80),
    }
    as_configured = compaction_policy(setup_of(local(server, "gpt-4o"), **configured))
    assert as_configured is not None and as_configured.threshold_tokens == 102_400
    # eve run --model openai/smollm2: gpt-4o's compiled 128 k is not smollm2's window
    overridden = compaction_policy(setup_of(local(server), **configured))
    assert overridden is not None and overridden.threshold_tokens is None
    declared = setup_of(local(server), **configured, model_context_window_tokens=4096)
    policy = compaction_policy(declared)
    assert policy is not None and policy.threshold_tokens == 3276


def test_a_chain_compacts_at_its_smallest_known_window(server: ScriptedServer) -> None:
    setup = replace(
        setup_of(local(server, "gpt-4o"), compaction=Compaction(threshold_percent=50)),
        fallbacks=(local(server, "gpt-4.1"), local(server)),
    )
    policy = compaction_policy(setup)
    assert policy is not None and policy.threshold_tokens == 64_000  # gpt-4o's, not 4.1's


def holding(tokens: int) -> list[Message]:
    """Messages that, after setup_of's instructions (2 tokens), make a ``tokens`` context."""
    return [user_message("x" * (tokens - 2 - 4) * 4)]  # 4 characters a token, +4 a message


def test_output_tokens_are_bounded_by_the_model_and_its_window(server: ScriptedServer) -> None:
    unknown = setup_of(local(server))
    limit = output_tokens(unknown, "openai/smollm2", messages=holding(100))
    assert limit == DEFAULT_MAX_OUTPUT_TOKENS
    small = setup_of(local(server), model_context_window_tokens=2048)
    assert output_tokens(small, "openai/smollm2", messages=holding(1000)) == 1048
    assert output_tokens(small, "openai/smollm2", messages=holding(2040)) == MIN_OUTPUT_TOKENS
    asked = setup_of(local(server), model_settings=ModelSettings(max_output_tokens=50_000))
    # gpt-4o's own cap
    assert output_tokens(asked, "openai/gpt-4o", messages=holding(100)) == 16_384


async def test_the_request_asks_for_no_more_than_the_window_leaves(server: ScriptedServer) -> None:
    server.add(answer("hello"))
    setup = setup_of(local(server), model_context_window_tokens=2048)
    result, _ = await run(setup)
    assert result.final_text == "hello" and not result.truncated
    asked = server.requests[0].body["max_tokens"]
    assert MIN_OUTPUT_TOKENS <= asked < 2048


async def test_a_cut_answer_is_reported_with_its_stop_reason(server: ScriptedServer) -> None:
    server.add(answer("The first half of", finish="length"))
    result, events = await run(setup_of(local(server)))
    assert result.stop_reason == "complete" and result.truncated
    completed = next(e for e in events if isinstance(e, TurnCompleted))
    assert completed.data.finish_reason == "max_tokens"


async def test_a_cut_typed_answer_fails_rather_than_being_sent_back(
    server: ScriptedServer,
) -> None:
    server.add(answer('{"city": "Par', finish="length"))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    setup = agent_setup(local(server), output_schema=schema)
    with pytest.raises(OutputTruncated, match="max_output_tokens") as caught:
        await run(setup)
    assert caught.value.model_id == "openai/smollm2"
    assert len(server.requests) == 1  # not asked to fix what the same limit would cut again


async def test_an_answer_cut_before_any_of_it_came_is_reported_as_cut(
    server: ScriptedServer,
) -> None:
    # llama.cpp streams nothing of a structured answer cut before any JSON value was whole
    server.add(answer("", finish="length"))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    with pytest.raises(OutputTruncated, match="none of it came"):
        await run(agent_setup(local(server), output_schema=schema))
    server.add(answer("", finish="length"))
    with pytest.raises(EmptyModelResponse, match="max_output_tokens"):
        await run(setup_of(local(server)))


async def test_a_window_error_says_what_to_set(server: ScriptedServer) -> None:
    # llama.cpp's server, asked for more than its --ctx-size
    body = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 9000,
            "n_ctx": 8192,
        }
    }
    server.add(json_reply(400, body))
    with pytest.raises(ModelContextWindowExceeded, match="model_context_window_tokens"):
        await run(setup_of(local(server)))


async def test_an_input_limit_counts_the_tokens_a_server_calls_cached(
    server: ScriptedServer,
) -> None:
    server.add(answer("hello", usage=MOSTLY_CACHED))
    setup = setup_of(local(server), limits=Limits(max_input_tokens_per_session=500))
    with pytest.raises(SessionLimitReached, match="max_input_tokens_per_session") as caught:
        await run(setup)
    assert caught.value.used == 1000  # not the 10 uncached ones


async def test_a_declared_price_lets_a_cost_limit_bound_a_local_model(
    server: ScriptedServer,
) -> None:
    server.add(answer("hello", usage=MOSTLY_CACHED))
    declared = ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0, cache_read_per_mtok=0.1)
    setup = setup_of(
        local(server),
        model_prices={"openai/smollm2": declared},
        limits=Limits(max_cost_usd_per_session=0.0001),
    )
    with pytest.raises(SessionLimitReached, match="max_cost_usd_per_session") as caught:
        await run(setup)
    # 10 uncached at $1, 990 cached at $0.10 and 4 out at $2 per million: exact, not a float
    assert caught.value.used == Decimal("0.000117")
