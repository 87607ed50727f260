"""``eve run`` and ``eve info`` with a local model and a fallback chain: the real CLI, the
real OpenAI SDK, a loopback OpenAI-compatible server standing in for llama.cpp's."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from eve.cli import main
from eve.cli.info_command import UNKNOWN_WINDOW
from eve.cli.run_command import TRUNCATED_NOTICE
from eve.compiler import compile_to_disk
from eve.compiler.pipeline import compile_agent
from eve.manifest import ModelPrice
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory
from tests.models.openai_script import chunk, text
from tests.models.sse_server import ScriptedServer, openai_sse

LOCAL = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(
            model="openai/smollm2",
            retries={"attempts": 1},
            model_prices={"openai/smollm2": {"input_per_mtok": 0.5, "output_per_mtok": 1.5}},
        )
    """,
}

CHAIN = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(model=["anthropic/claude-sonnet-4-5", "openai/smollm2"])
    """,
    "agent/tools/web_search.py": """
        from eve.tools import provider_tool
        default = provider_tool(
            provider="anthropic", type="web_search_20250305", description="Search the web."
        )
    """,
}


@pytest.mark.parametrize(("finish", "noticed"), [("length", True), ("stop", False)])
def test_a_cut_answer_is_printed_with_a_notice(
    make_app: AppFactory, finish: str, noticed: bool
) -> None:
    root = make_app(LOCAL)
    with ScriptedServer() as server:
        server.add(openai_sse([text("The first half of"), chunk(finish=finish)]))
        done = eve_run(root, "hello", env={"OPENAI_BASE_URL": f"{server.url}/v1"})
    assert done.returncode == 0, done.stderr  # a text answer, cut or not, is an answer
    assert done.stdout.strip() == "The first half of"
    assert (TRUNCATED_NOTICE in done.stderr) is noticed


def test_info_names_the_chain_and_says_the_local_window_is_unknown(make_app: AppFactory) -> None:
    root = make_app(CHAIN)
    compile_to_disk(root)
    shown = CliRunner().invoke(main, ["-C", str(root), "info"])
    assert shown.exit_code == 0, shown.output
    assert "fallback: openai/smollm2" in shown.output
    assert "context window: 200000 tokens" in shown.output  # the first model's, compiled
    local = make_app(LOCAL)
    config = compile_to_disk(local).manifest.nodes["__root__"].config
    assert config.model_prices["openai/smollm2"] == ModelPrice(
        input_per_mtok=0.5, output_per_mtok=1.5
    )
    shown = CliRunner().invoke(main, ["-C", str(local), "info"])
    assert f"context window: {UNKNOWN_WINDOW}" in shown.output


def test_a_provider_tool_another_model_cannot_run_is_a_warning(make_app: AppFactory) -> None:
    result = compile_agent(make_app(CHAIN))
    [warning] = [
        d for d in result.diagnostics.items if d.code == "compile/provider-tool-unsupported"
    ]
    assert warning.severity == "warning"
    assert "openai/smollm2" in warning.message and "`web_search`" in warning.message
    assert warning.source_path == "agent/tools/web_search.py"
    alone = make_app(
        {
            **CHAIN,
            "agent/agent.py": CHAIN["agent/agent.py"].replace(
                '["anthropic/claude-sonnet-4-5", "openai/smollm2"]', '"anthropic/claude-sonnet-4-5"'
            ),
        }
    )
    codes = {d.code for d in compile_agent(alone).diagnostics.items}
    assert "compile/provider-tool-unsupported" not in codes


def test_model_replaces_the_chain_and_is_told_of_tools_it_cannot_run(
    make_app: AppFactory,
) -> None:
    root = make_app(CHAIN)
    with ScriptedServer() as server:
        server.add(openai_sse([text("Hello."), chunk(finish="stop")]))
        env = {"OPENAI_BASE_URL": f"{server.url}/v1", "ANTHROPIC_API_KEY": "sk-ant-unused"}
        done = eve_run(root, "hello", "--model", "openai/smollm2", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello."
    assert "web_search is a tool anthropic runs itself; openai/smollm2 is not offered it" in (
        done.stderr
    )
    [request] = server.requests  # the chain's Claude was never asked
    assert request.body["model"] == "smollm2"
    assert "web_search" not in str(request.body.get("tools"))


def test_without_the_first_models_key_the_offline_model_runs_alone(make_app: AppFactory) -> None:
    root = make_app(CHAIN)
    with ScriptedServer() as server:
        done = eve_run(root, "hello", env={"OPENAI_BASE_URL": f"{server.url}/v1"})
    assert done.returncode == 0, done.stderr
    assert "ANTHROPIC_API_KEY is not set" in done.stderr
    assert server.requests == []  # a real fallback after a fake model would mix the two
