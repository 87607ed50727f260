"""define_agent(model_settings=...): compiled into the manifest, carried by every request of
the loop, and sent as each provider API's own parameters; what an API has no parameter for is
refused (ModelSettingUnsupported), never dropped."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest

from eve.compiler.pipeline import compile_agent
from eve.errors import ModelSettingUnsupported
from eve.execution import agent_setup, run_agent
from eve.execution.environment import TurnEnvironment
from eve.manifest import AgentConfig, ModelSettings
from eve.messages import user_message
from eve.models.anthropic_request import request_params
from eve.models.base import DEFAULT_MAX_OUTPUT_TOKENS, ModelRequest
from eve.models.function import FunctionModel
from eve.models.openai import OpenAIModel
from tests.conftest import AppFactory
from tests.execution.helpers import text
from tests.models.openai_script import chunk
from tests.models.openai_script import text as openai_text
from tests.models.sse_server import ScriptedServer, openai_sse

SETTINGS = ModelSettings(
    temperature=0.2,
    max_output_tokens=900,
    top_p=0.9,
    stop_sequences=["END"],
    seed=7,
    extra={"metadata": {"team": "desk"}},
)


def test_model_settings_compile_into_the_manifest(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/agent.py": """
                from eve import define_agent
                default = define_agent(model="offline/test", model_settings={
                    "temperature": 0.2, "max_output_tokens": 900, "top_p": 0.9,
                    "stop_sequences": ["END"], "seed": 7, "extra": {"metadata": {"team": "desk"}}})
            """
        }
    )
    manifest = compile_agent(root).manifest
    assert manifest is not None
    assert manifest.nodes["__root__"].config.model_settings == SETTINGS


@pytest.mark.parametrize(
    "bad", ['{"temperature": 3}', '{"top_p": 0}', '{"max_output_tokens": 0}', '{"topk": 5}']
)
def test_impossible_model_settings_are_a_compile_error(make_app: AppFactory, bad: str) -> None:
    root = make_app(
        {
            "agent/agent.py": f"""
                from eve import define_agent
                default = define_agent(model="offline/test", model_settings={bad})
            """
        }
    )
    result = compile_agent(root)
    assert result.manifest is None
    assert any("model_settings" in d.message for d in result.diagnostics.items)


async def test_the_loop_sends_the_nodes_settings_with_every_request() -> None:
    model = FunctionModel(lambda request: text("done"))
    setup = agent_setup(model)
    agent = dataclasses.replace(setup.agent, config=AgentConfig(model_settings=SETTINGS))
    await run_agent(dataclasses.replace(setup, agent=agent), "hi", env=TurnEnvironment())
    [sent] = model.requests
    assert sent.settings == SETTINGS and sent.max_output_tokens == 900
    plain = FunctionModel(lambda request: text("done"))
    await run_agent(agent_setup(plain), "hi", env=TurnEnvironment())
    assert plain.requests[0].max_output_tokens == DEFAULT_MAX_OUTPUT_TOKENS


def test_anthropic_takes_temperature_top_p_stop_sequences_and_extras() -> None:
    no_seed = msgspec.structs.replace(SETTINGS, seed=None)
    request = ModelRequest(system="", messages=[user_message("hi")], settings=no_seed)
    params = request_params("claude-sonnet-4-5", request)
    assert (params["temperature"], params["top_p"], params["stop_sequences"]) == (
        0.2,
        0.9,
        ["END"],
    )
    assert params["extra_body"] == {"metadata": {"team": "desk"}}
    # the Messages API has no seed: refused rather than dropped
    with pytest.raises(ModelSettingUnsupported, match="seed") as raised:
        request_params("claude-sonnet-4-5", dataclasses.replace(request, settings=SETTINGS))
    assert raised.value.setting == "seed"


async def test_chat_completions_take_all_of_them(server: ScriptedServer) -> None:
    chat_server = server
    chat_server.add(openai_sse([openai_text("ok"), chunk(finish="stop")]))
    model = OpenAIModel(
        "local-model",
        api_key="not-needed",
        base_url=chat_server.url + "/v1",
        api="chat-completions",
    )
    request = ModelRequest(system="", messages=[user_message("hi")], settings=SETTINGS)
    async for _ in model.stream(request):
        pass
    body = chat_server.requests[0].body
    assert (body["temperature"], body["top_p"], body["stop"], body["seed"]) == (
        0.2,
        0.9,
        ["END"],
        7,
    )
    assert body["metadata"] == {"team": "desk"}  # an extra field of the body


async def test_the_responses_api_refuses_a_seed_before_anything_is_sent() -> None:
    model = OpenAIModel(
        "gpt-4.1", api_key="sk-test", base_url="http://127.0.0.1:9/v1", api="responses"
    )
    request = ModelRequest(system="", messages=[user_message("hi")], settings=SETTINGS)
    with pytest.raises(ModelSettingUnsupported, match="chat-completions"):
        async for _ in model.stream(dataclasses.replace(request)):
            pass
