"""A model call retried inside a durable turn is still one durable step (issue 11, retries).

The real ``anthropic`` SDK talks to the loopback server, which answers one turn's first try
with Anthropic's 529 ``overloaded_error`` ("Errors", https://docs.anthropic.com/en/api/errors)
and the other turn's at once; both turns must record the same durable steps.
"""

from __future__ import annotations

from tests.conftest import AppFactory
from tests.models.sse_server import ScriptedServer
from tests.models.test_retries import KEY, anthropic_error, anthropic_hello
from tests.sessions.harness import count, types
from tests.sessions.inprocess import InProcessServer
from tests.sessions.records import step_records

AGENT = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(
            model="anthropic/claude-test",
            retries={"attempts": 3, "max_delay_seconds": 0.01},
            prompt_cache=False,
        )
    """,
}


def test_a_retried_model_call_is_one_durable_step(make_app: AppFactory) -> None:
    with ScriptedServer() as api:
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.url}
        root = make_app(AGENT)
        server = InProcessServer(root, env=env).start()
        try:
            api.add(anthropic_hello())
            calm = server.create("hi")
            calm_events = server.wait_for(calm, count("turn.completed"))
            api.add(anthropic_error(529, "overloaded_error"), anthropic_hello())
            busy = server.create("hi")
            busy_events = server.wait_for(busy, count("turn.completed"))
            calm_steps = step_records(root, f"{calm}:turn-0")
            busy_steps = step_records(root, f"{busy}:turn-0")
        finally:
            server.stop()
    assert calm_steps, "the turn recorded no durable step: the comparison below would prove nothing"
    assert "model.retrying" not in types(calm_events)
    assert types(busy_events).count("model.retrying") == 1
    assert len(api.requests) == 3  # one try, then two: the retry happened
    # the same steps, by name: the retry was inside the model call's step, not a step of its own
    assert [s["function_name"] for s in busy_steps] == [s["function_name"] for s in calm_steps]
    assert not any(e["data"].get("attempt") for e in busy_events)  # nothing was re-run
