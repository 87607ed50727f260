"""Fallback chains (``define_agent(model=[...])``): the real OpenAI SDK against loopback
servers, one per model of the chain, the first down or refusing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from eve.authoring.agent import define_agent
from eve.errors import AuthoringError, ModelHTTPError
from eve.events import ModelFallback, SessionEvent, TurnCompleted
from eve.execution import RunResult, TurnEnvironment, run_agent
from eve.execution.setup import AgentSetup
from eve.manifest import ROOT_NODE_ID, AgentConfig, Retries
from eve.messages import AssistantMessage, ReasoningPart, TextPart, user_message
from eve.models.anthropic import AnthropicModel
from eve.models.openai import OpenAIModel
from eve.runtime import ResolvedAgent
from tests.execution.test_checkpoints import JsonRecorder
from tests.models.openai_script import chunk, text, usage
from tests.models.sse_server import Reply, ScriptedServer, json_reply, openai_sse
from tests.models.test_retries import anthropic_error

KEY = "sk-test-SECRET-1234567890"
#: an outage is not retried: the chain moves on at once
ONE_TRY = Retries(attempts=1)


def outage() -> Reply:
    return json_reply(503, {"error": {"message": "The engine is currently overloaded."}})


def hello() -> Reply:
    return openai_sse([text("hello"), chunk(finish="stop"), usage(12, 3)])


@pytest.fixture
def servers() -> Iterator[tuple[ScriptedServer, ScriptedServer]]:
    with ScriptedServer() as first, ScriptedServer() as second:
        yield first, second


def chain(
    first: ScriptedServer, second: ScriptedServer, *, retries: Retries = ONE_TRY
) -> AgentSetup:
    """An agent whose chain is ``openai/big`` (``first``) then ``openai/local``."""
    big = OpenAIModel("big", api_key=KEY, base_url=f"{first.url}/v1")
    local = OpenAIModel("local", api_key=KEY, base_url=f"{second.url}/v1")
    config = AgentConfig(model="openai/big", fallback=["openai/local"], retries=retries)
    agent = ResolvedAgent(node_id=ROOT_NODE_ID, config=config, instructions="")
    return AgentSetup(agent=agent, client=big, fallbacks=(local,))


async def run(setup: AgentSetup, **env: Any) -> tuple[RunResult, list[SessionEvent]]:
    events: list[SessionEvent] = []
    result = await run_agent(setup, "hi", env=TurnEnvironment(on_event=events.append, **env))
    return result, events


def test_a_list_of_models_is_the_model_and_its_fallbacks() -> None:
    config = define_agent(model=["anthropic/claude-x", "openai/local"]).config
    assert (config.model, config.fallback) == ("anthropic/claude-x", ("openai/local",))
    same = define_agent(model="anthropic/claude-x", fallback=["openai/local"]).config
    assert same == config


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"model": []}, "empty list"),
        ({"model": ["a/x", "b/y"], "fallback": ["c/z"]}, "name the chain once"),
        ({"fallback": ["b/y"]}, "without model"),
        ({"model": ["a/x", "a/x"]}, "twice"),
        ({"model": ["a/x", "gpt-4o"]}, "provider prefix"),
    ],
)
def test_a_chain_that_cannot_be_tried_is_refused(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(AuthoringError, match=problem):
        define_agent(**options)


async def test_an_outage_moves_the_step_to_the_next_model(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    first, second = servers
    first.add(outage())
    second.add(hello())
    result, events = await run(chain(first, second))
    assert result.final_text == "hello"
    fallback = [e for e in events if isinstance(e, ModelFallback)]
    assert [(e.data.from_model, e.data.to_model) for e in fallback] == [
        ("openai/big", "openai/local")
    ]
    assert "503" in fallback[0].data.reason and KEY not in fallback[0].data.reason
    assert fallback[0].data.step_index == 0
    # the tokens are the model's that answered: priced (here: unknown) as that model
    assert result.cost.unpriced == ["openai/local"]
    assert (len(first.requests), len(second.requests)) == (1, 1)


async def test_exhausted_retries_move_on_after_the_retries(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    first, second = servers
    first.add(outage(), outage())
    second.add(hello())
    result, events = await run(
        chain(first, second, retries=Retries(attempts=2, max_delay_seconds=0.01))
    )
    kinds = [e.type for e in events]
    assert kinds.index("model.retrying") < kinds.index("model.fallback")
    fallback = next(e for e in events if isinstance(e, ModelFallback))
    assert fallback.data.reason.startswith("ModelRetriesExhausted")
    assert result.final_text == "hello"


async def test_a_refused_request_fails_without_asking_the_next_model(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    first, second = servers
    first.add(json_reply(400, {"error": {"message": "Invalid value for 'messages'."}}))
    with pytest.raises(ModelHTTPError, match="400"):
        await run(chain(first, second))
    assert second.requests == []  # another model would only be sent the same wrong request


async def test_a_replayed_step_is_the_answering_models_and_asks_none(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    first, second = servers
    first.add(outage())
    second.add(hello())
    recorder = JsonRecorder()
    await run(chain(first, second), recorder=recorder)
    assert b'"model":"openai/local"' in recorder.log["step:0"]  # the record says who answered

    replayed, events = await run(chain(first, second), recorder=JsonRecorder(recorder.log))
    assert (len(first.requests), len(second.requests)) == (1, 1)  # nobody asked again
    assert not any(isinstance(e, ModelFallback) for e in events)
    assert replayed.final_text == "hello"
    assert replayed.cost.unpriced == ["openai/local"]
    completed = next(e for e in events if isinstance(e, TurnCompleted))
    assert completed.data.usage.output_tokens == 3


async def test_another_providers_reasoning_never_reaches_the_fallback(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    claude, local = servers
    claude.add(anthropic_error(529, "overloaded_error"))
    local.add(hello())
    first = AnthropicModel("claude-test", api_key=KEY, base_url=claude.url)
    setup = replace(chain(claude, local), client=first)
    thought = ReasoningPart(provider="anthropic", text="a signed thought", signature="sig-1")
    earlier = [user_message("hello"), AssistantMessage(parts=[thought, TextPart(text="hi")])]
    events: list[SessionEvent] = []
    env = TurnEnvironment(on_event=events.append)
    result = await run_agent(setup, "again", history=earlier, env=env)
    assert result.final_text == "hello"
    sent = json.dumps(local.requests[0].body)
    assert '"hi"' in sent and "a signed thought" not in sent and "sig-1" not in sent
    assert "a signed thought" in json.dumps(claude.requests[0].body)  # Claude was sent it
