"""Session limits a person can lift (issue 13): crossing one parks the turn with a
``session-limit`` request; ``raise`` grows the allowance by the configured amount and the
turn goes on, ``end`` ends the session with the limit as its reason."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from eve.client import EveClient, SessionLimits
from tests.conftest import AppFactory
from tests.models.sse_server import ScriptedServer
from tests.models.test_retries import KEY, anthropic_hello
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Event, Server, count, types
from tests.sessions.inprocess import InProcessServer


def limit_requests(events: list[Event]) -> list[dict[str, Any]]:
    return [
        dict(request)
        for e in events
        if e["type"] == "input.requested"
        for request in e["data"]["requests"]
        if request["kind"] == "session-limit"
    ]


def park_and_answer(server: InProcessServer, option: str) -> tuple[str, dict[str, Any]]:
    """A new session whose first turn parks on a limit, answered with ``option``."""
    session = server.create("hello")
    [request] = limit_requests(server.wait_for(session, count("turn.waiting")))
    server.answer(session, request["request_id"], option)
    return session, request


def ended(events: list[Event]) -> list[str]:
    return [e["data"]["reason"] for e in events if e["type"] == "session.completed"]


def stops(events: list[Event]) -> list[str]:
    return [e["data"]["stop_reason"] for e in events if e["type"] == "turn.completed"]


def test_the_output_limit_parks_is_raised_then_ends_the_session(make_app: AppFactory) -> None:
    # the offline model counts len(text) // 4 + 1 output tokens: 11 a reply here
    limits = {"max_turns": 5, "max_output_tokens_per_session": 10}
    root = scripted_app(make_app, [say("a" * 40), say("b" * 40)], limits=limits)
    server = InProcessServer(root).start()
    try:
        session, request = park_and_answer(server, "raise")
        first = server.wait_for(session, count("session.waiting"))
        with EveClient(server.url, transport=server.transport()) as client:
            raised = client.session(session)
        assert server.send(session, "again").status_code == 202
        second = server.wait_for(session, count("turn.waiting", 2))
        again = limit_requests(second)[1]
        server.answer(session, again["request_id"], "end")
        last = server.wait_for(session, count("session.completed"))
        refused = server.send(session, "more")
    finally:
        server.stop()
    assert request["limit"] == "max_output_tokens_per_session"
    assert (request["used"], request["allowed"], request["raise_by"]) == ("11", "10", "10")
    assert [o["id"] for o in request["options"]] == ["raise", "end"]
    assert request["usage"]["output_tokens"] == 11
    # parked after the step, before the turn ended; the raise let it end normally
    assert types(first).index("input.requested") < types(first).index("turn.completed")
    assert stops(first) == ["complete"] and not ended(first)
    assert raised.limits == SessionLimits(max_output_tokens_per_session=20)
    assert raised.left.max_output_tokens_per_session == 9
    assert (again["used"], again["allowed"]) == ("22", "20")
    assert stops(last) == ["complete", "complete"]
    assert ended(last) == ["max_output_tokens_per_session"]
    assert refused.status_code == 409 and refused.json()["code"] == "session_not_active"


def test_ending_on_the_input_limit_mid_turn_stops_the_turn(make_app: AppFactory) -> None:
    limits = {"max_turns": 5, "max_input_tokens_per_session": 5}
    root = scripted_app(make_app, [call("leak"), say("never said")], ("leak",), limits)
    server = InProcessServer(root).start()
    try:
        session, request = park_and_answer(server, "end")
        events = server.wait_for(session, count("session.completed"))
    finally:
        server.stop()
    assert request["limit"] == "max_input_tokens_per_session" and int(request["used"]) >= 5
    # the model wanted another step; the person ended the session instead
    assert stops(events) == ["session_limit"]
    assert ended(events) == ["max_input_tokens_per_session"]
    assert types(events).count("step.completed") == 1
    assert [e["data"]["option_id"] for e in events if e["type"] == "input.resolved"] == ["end"]


def test_the_cost_limit_with_a_priced_model_parks_and_a_raise_goes_on(
    make_app: AppFactory,
) -> None:
    agent = {
        "agent/agent.py": """
            from eve import define_agent
            default = define_agent(
                model="anthropic/claude-sonnet-4-5",
                prompt_cache=False,
                limits={"max_cost_usd_per_session": 0.0001},
            )
        """,
    }
    with ScriptedServer() as api:
        # each reply: 10 input tokens at $3/M and 5 output at $15/M, $0.000105
        api.add(anthropic_hello(), anthropic_hello())
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.url}
        server = InProcessServer(make_app(agent), env=env).start()
        try:
            session = server.create("hi")
            parked = server.wait_for(session, count("turn.waiting"))
            [request] = limit_requests(parked)
            server.answer(session, request["request_id"], "raise")
            server.wait_for(session, count("session.waiting"))
            server.send(session, "hi again")
            second = server.wait_for(session, count("turn.waiting", 2))
            again = limit_requests(second)[1]
            server.answer(session, again["request_id"], "end")
            events = server.wait_for(session, count("session.completed"))
            with EveClient(server.url, transport=server.transport()) as client:
                summary = client.session(session)
        finally:
            server.stop()
    assert request["limit"] == "max_cost_usd_per_session"
    assert (request["used"], request["allowed"]) == ("0.000105", "0.0001")
    assert request["cost"] == {"usd": "0.000105"}
    assert (again["used"], again["allowed"]) == ("0.000210", "0.0002")
    assert ended(events) == ["max_cost_usd_per_session"]
    assert summary.status == "ended" and summary.ended_reason == "max_cost_usd_per_session"
    assert summary.limits.max_cost_usd_per_session == Decimal("0.0002")
    assert summary.left.max_cost_usd_per_session == Decimal(0)


def test_a_limit_request_waits_across_a_restart_and_is_answered_once(
    make_app: AppFactory,
) -> None:
    limits = {"max_turns": 5, "max_output_tokens_per_session": 10}
    root = scripted_app(make_app, [say("a" * 40)], limits=limits)
    server = Server(root).start()
    try:
        session = server.create("hello")
        parked = server.wait_for(session, count("turn.waiting"))
        [request] = limit_requests(parked)
        server.kill()
        server.restart()
        server.answer(session, request["request_id"], "raise")
        events = server.wait_for(session, count("session.waiting"))
        repeat = server.post(
            f"/session/{session}",
            {"inputResponses": [{"requestId": request["request_id"], "optionId": "raise"}]},
        )
    finally:
        server.stop()
    assert len(limit_requests(events)) == 1  # asked once, not again after the restart
    assert stops(events) == ["complete"] and not ended(events)
    assert repeat.status_code == 409 and repeat.json()["code"] == "input_request_not_pending"


def test_an_answer_that_is_not_raise_or_end_is_refused(make_app: AppFactory) -> None:
    limits = {"max_turns": 5, "max_output_tokens_per_session": 10}
    root = scripted_app(make_app, [say("a" * 40)], limits=limits)
    server = InProcessServer(root).start()
    try:
        session = server.create("hello")
        [request] = limit_requests(server.wait_for(session, count("turn.waiting")))
        body = {"inputResponses": [{"requestId": request["request_id"], "optionId": "approve"}]}
        refused = server.post(f"/session/{session}", body)
        server.answer(session, request["request_id"], "end")
        events = server.wait_for(session, count("session.completed"))
    finally:
        server.stop()
    assert refused.status_code == 400 and refused.json()["code"] == "input_option_unknown"
    assert ended(events) == ["max_output_tokens_per_session"]


def test_cancelling_a_turn_parked_on_a_limit_keeps_the_session(make_app: AppFactory) -> None:
    limits = {"max_turns": 5, "max_output_tokens_per_session": 10}
    root = scripted_app(make_app, [call("leak"), say("b" * 40)], ("leak",), limits)
    server = InProcessServer(root).start()
    try:
        session = server.create("hello")
        server.wait_for(session, count("turn.waiting"))
        assert server.post(f"/session/{session}/cancel").status_code == 202
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    resolved = [e["data"]["option_id"] for e in events if e["type"] == "input.resolved"]
    assert resolved == ["cancelled"]
    assert "turn.cancelled" in types(events) and not ended(events)
    # the reply crossed it (the call before did not): parked after that step, then cancelled
    assert types(events)[-6:] == [
        "step.completed",
        "input.requested",
        "turn.waiting",
        "input.resolved",
        "turn.cancelled",
        "session.waiting",
    ]
