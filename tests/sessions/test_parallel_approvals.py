"""A durable step with several calls needing a person: one round of questions, then the
calls run at once, each its own durable step."""

from __future__ import annotations

from typing import Any

from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import assert_dense, count, types
from tests.sessions.inprocess import InProcessServer
from tests.sessions.records import step_records


def test_the_approvals_of_a_step_are_one_round_and_its_calls_separate_steps(
    make_app: AppFactory,
) -> None:
    both = {
        "tool_calls": [
            {"name": "ship", "input": {"item": "anvil"}},
            {"name": "ship", "input": {"item": "bell"}},
        ]
    }
    root = scripted_app(make_app, [both, say("done")], tools=("ship",))
    server = InProcessServer(root).start()
    try:
        session = server.create("ship both")
        parked = server.wait_for(session, count("turn.waiting"))
        [asked] = [e["data"]["requests"] for e in parked if e["type"] == "input.requested"]
        assert [r["input"]["item"] for r in asked] == ["anvil", "bell"]
        server.answer(session, asked[1]["request_id"], "approve")
        server.answer(session, asked[0]["request_id"], "approve")
        events = server.wait_for(session, count("session.waiting"))
        steps: list[dict[str, Any]] = step_records(root, f"{session}:turn-0")
    finally:
        server.stop()
    assert_dense(events)
    assert types(events).count("input.requested") == 1
    assert sorted((root / "shipped.log").read_text().split()) == ["anvil", "bell"]
    results = [e["data"]["output"] for e in events if e["type"] == "action.result"]
    assert sorted(results) == ["shipped anvil", "shipped bell"]
    names = [s["function_name"] for s in steps]
    # the answered part stops before the two calls, each a step of its own
    assert {"step:0", "step:0:answered:0", "step:0:call:0", "step:0:call:1"} <= set(names)
    # each call's result event is in its own step's record, not in its sibling's
    records = {s["function_name"]: str(s["output"]) for s in steps}
    assert "shipped anvil" in records["step:0:call:0"]
    assert "shipped bell" not in records["step:0:call:0"]
    assert "shipped bell" in records["step:0:call:1"]
