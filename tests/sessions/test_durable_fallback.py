"""A fallback inside a durable turn: one durable step whose recorded response names the model
that answered (Anthropic down with its 529 ``overloaded_error``, an OpenAI-compatible server
answering), so a recovered workflow replays that model's answer without asking any."""

from __future__ import annotations

from typing import Any

from tests.conftest import AppFactory
from tests.models.sse_server import ScriptedServer
from tests.models.test_retries import KEY, anthropic_error, openai_hello
from tests.sessions.harness import count, types
from tests.sessions.inprocess import InProcessServer
from tests.sessions.records import step_records

AGENT = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(
            model=["anthropic/claude-test", "openai/local"],
            retries={"attempts": 2, "max_delay_seconds": 0.01},
            prompt_cache=False,
        )
    """,
}


def test_a_fallback_is_one_durable_step_that_records_who_answered(make_app: AppFactory) -> None:
    with ScriptedServer() as anthropic, ScriptedServer() as local:
        env = {
            "ANTHROPIC_API_KEY": KEY,
            "ANTHROPIC_BASE_URL": anthropic.url,
            "OPENAI_BASE_URL": f"{local.url}/v1",
        }
        anthropic.add(*[anthropic_error(529, "overloaded_error")] * 2)
        local.add(openai_hello())
        root = make_app(AGENT)
        server = InProcessServer(root, env=env).start()
        try:
            session = server.create("hi")
            events = server.wait_for(session, count("turn.completed"))
            steps: list[dict[str, Any]] = step_records(root, f"{session}:turn-0")
        finally:
            server.stop()
    kinds = types(events)
    assert kinds.count("model.retrying") == 1 and kinds.count("model.fallback") == 1
    fallback = next(e for e in events if e["type"] == "model.fallback")["data"]
    assert (fallback["from_model"], fallback["to_model"]) == (
        "anthropic/claude-test",
        "openai/local",
    )
    assert KEY not in fallback["reason"]
    completed = next(e for e in events if e["type"] == "turn.completed")["data"]
    assert completed["cost"]["unpriced"] == ["openai/local"]
    assert (len(anthropic.requests), len(local.requests)) == (2, 1)
    [part] = [s for s in steps if s["function_name"] == "step:0"]
    # the step's record: its response names the model that answered
    assert b'"finish_reason":"end_turn","usage":{},"model":"openai/local"' in part["output"]
