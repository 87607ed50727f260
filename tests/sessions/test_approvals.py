"""A tool that needs a person parks the turn; the answer continues it exactly once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Event, Server, assert_dense, count, types
from tests.sessions.inprocess import InProcessServer


def approval_app(make_app: AppFactory) -> Path:
    return scripted_app(make_app, [call("ship", item="anvil"), say("done")], tools=("ship",))


def request_of(events: list[Event]) -> dict[str, Any]:
    [requested] = [e for e in events if e["type"] == "input.requested"]
    [request] = requested["data"]["requests"]
    return dict(request)


def test_approval_parks_across_a_restart_and_runs_once(make_app: AppFactory) -> None:
    root = approval_app(make_app)
    server = Server(root).start()
    try:
        session = server.create("ship the anvil")
        parked = server.wait_for(session, count("turn.waiting"))
        request = request_of(parked)
        assert request["kind"] == "tool-approval" and request["tool_name"] == "ship"
        assert request["input"] == {"item": "anvil"}
        assert [o["id"] for o in request["options"]] == ["approve", "deny"]
        assert parked[-1]["data"]["on"] == "input"
        server.kill()
        server.restart()
        # after the restart the same request still waits, and nothing ran
        assert not (root / "shipped.log").exists()
        server.answer(session, request["request_id"], "approve")
        events = server.wait_for(session, count("session.waiting"))
        # a second answer to the same request is refused
        again = server.post(
            f"/session/{session}",
            {"inputResponses": [{"requestId": request["request_id"], "optionId": "approve"}]},
        )
        assert again.status_code == 409
    finally:
        server.stop()
    assert (root / "shipped.log").read_text() == "anvil\n"
    assert_dense(events)
    assert types(events).count("input.requested") == 1
    [resolved] = [e["data"] for e in events if e["type"] == "input.resolved"]
    assert resolved["option_id"] == "approve"
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert (result["status"], result["output"]) == ("completed", "shipped anvil")


def test_a_denial_is_a_result_the_model_sees(make_app: AppFactory) -> None:
    root = approval_app(make_app)
    server = InProcessServer(root).start()
    try:
        session = server.create("ship the anvil")
        request = request_of(server.wait_for(session, count("turn.waiting")))
        server.answer(session, request["request_id"], "deny")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    assert not (root / "shipped.log").exists()
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert result["status"] == "rejected"
    assert "denied" in result["output"]
    assert [e["data"]["message"] for e in events if e["type"] == "message.completed"] == ["done"]


def test_cancel_wakes_a_parked_turn(make_app: AppFactory) -> None:
    root = approval_app(make_app)
    server = InProcessServer(root).start()
    try:
        session = server.create("ship the anvil")
        server.wait_for(session, count("turn.waiting"))
        response = server.post(f"/session/{session}/cancel")
        assert response.status_code == 202
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    assert "turn.cancelled" in types(events)
    assert not (root / "shipped.log").exists()


def test_an_option_the_request_does_not_offer_is_refused_and_answers_nothing(
    make_app: AppFactory,
) -> None:
    root = approval_app(make_app)
    server = InProcessServer(root).start()
    try:
        session = server.create("ship the anvil")
        request = request_of(server.wait_for(session, count("turn.waiting")))
        body = {"inputResponses": [{"requestId": request["request_id"], "optionId": "maybe"}]}
        refused = server.post(f"/session/{session}", body)
        assert refused.status_code == 400
        assert refused.json()["code"] == "input_option_unknown"
        assert "offers approve, deny, not 'maybe'" in refused.json()["error"]
        # the request still waits, and a valid answer goes through
        server.answer(session, request["request_id"], "approve")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    assert (root / "shipped.log").read_text() == "anvil\n"
    assert types(events).count("input.resolved") == 1


def test_a_parked_turn_goes_on_after_agent_changes_and_stale_state_is_dropped(
    make_app: AppFactory,
) -> None:
    root = scripted_app(
        make_app,
        [call("leak"), say("counted"), call("ship", item="anvil"), say("shipped")],
        tools=("ship", "leak"),
    )
    server = Server(root).start()
    try:
        session = server.create("count")
        server.wait_for(session, count("session.waiting"))
        server.send(session, "ship the anvil")
        request = request_of(server.wait_for(session, count("turn.waiting")))
        first_log = server.stop()
        # while the turn waits, the agent changes: a new tool, and leak's state slot is gone
        (root / "agent/tools/leak.py").unlink()
        (root / "agent/tools/wave.py").write_text(
            "from eve.tools import tool\n\n\n@tool\ndef wave() -> str:\n"
            "    '''Wave.'''\n    return 'hi'\n"
        )
        server.start()  # recompiles agent/
        server.answer(session, request["request_id"], "approve")
        events = server.wait_for(session, count("session.waiting", 2))
    finally:
        log = server.stop()
    assert "recompiled" in log, first_log + log
    assert (root / "shipped.log").read_text() == "anvil\n"
    assert [e["data"]["message"] for e in events if e["type"] == "message.completed"] == [
        "counted",
        "shipped",
    ]
    assert "dropping unknown context key 'state:mine'" in log  # the stale slot, logged
