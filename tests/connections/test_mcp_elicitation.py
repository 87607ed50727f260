"""A server's elicitation in a durable session, answered over HTTP in process: the turn
shows a form (``input.requested``, ``kind: "form"``), the answer's values are checked
against its fields and reach the server; decline and a cancelled turn as the spec says."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.conftest import AppFactory
from tests.connections.asking_apps import asking_connection
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Event, Server, count, types
from tests.sessions.inprocess import InProcessServer


def asking_app(make_app: AppFactory, responses: list[dict[str, Any]]) -> Path:
    root = scripted_app(make_app, responses)
    (root / "agent" / "connections").mkdir()
    options = 'sampling="ask", call_timeout_seconds=1,'
    source = asking_connection(root / "counted", options)
    (root / "agent" / "connections" / "asking.py").write_text(source)
    return root


def form_of(events: list[Event]) -> dict[str, Any]:
    [request] = [
        r for e in events if e["type"] == "input.requested" for r in e["data"]["requests"]
    ][-1:]
    assert request["kind"] == "form"
    return dict(request)


def answer(
    server: InProcessServer,
    session: str,
    request: dict[str, Any],
    option: str,
    values: dict[str, Any] | None = None,
) -> Any:
    entry: dict[str, Any] = {"requestId": request["request_id"], "optionId": option}
    if values is not None:
        entry["values"] = values
    return server.post(f"/session/{session}", {"inputResponses": [entry]})


def results(events: list[Event]) -> list[str]:
    return [e["data"]["output"] for e in events if e["type"] == "action.result"]


def test_a_form_is_answered_over_http_with_checked_values(make_app: AppFactory) -> None:
    root = asking_app(make_app, [call("asking__book"), say("booked")])
    server = InProcessServer(root).start()
    try:
        session = server.create("book a room")
        form = form_of(server.wait_for(session, count("turn.waiting")))
        assert form["tool_name"] == "asking__book" and form["connection"] == "asking"
        assert form["message"] == "Who is staying, and how long?"
        assert sorted(form["schema"]["properties"]) == ["name", "nights", "room"]
        assert [o["id"] for o in form["options"]] == ["accept", "decline", "cancel"]
        wrong = answer(server, session, form, "accept", {"name": "Ada", "nights": "two"})
        assert wrong.status_code == 400
        assert wrong.json()["code"] == "form_answer_invalid"
        assert "nights" in wrong.json()["error"] and "room" in wrong.json()["error"]
        # the person takes longer than call_timeout_seconds: the call's clock stops while
        # they are asked (a sleep: the point is time passing, no event marks it)
        time.sleep(1.2)
        done = answer(
            server, session, form, "accept", {"name": "Ada", "nights": 2, "room": "double"}
        )
        assert done.status_code == 202, done.text
        # the first answer counts: another, taken yet or not, is refused
        again = answer(server, session, form, "decline")
        assert again.status_code == 409 and again.json()["code"] == "input_request_not_pending"
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    assert results(events) == ["booked double for Ada, 2 nights"]
    assert (root / "counted").read_text() == "book\n", "the server got the call once"
    [resolved] = [e["data"] for e in events if e["type"] == "input.resolved"]
    assert resolved["option_id"] == "accept" and resolved["responder"]["kind"] == "operator"
    assert "Ada" not in str([e for e in events if e["type"] != "action.result"]), (
        "the values reach the server, not the log"
    )


def test_decline_and_a_cancelled_turn_reach_the_server_as_the_spec_says(
    make_app: AppFactory,
) -> None:
    root = asking_app(
        make_app,
        [call("asking__book"), say("not booked"), call("asking__haiku", topic="rain")],
    )
    server = InProcessServer(root).start()
    try:
        session = server.create("book a room")
        form = form_of(server.wait_for(session, count("turn.waiting")))
        assert answer(server, session, form, "decline").status_code == 202
        server.wait_for(session, count("session.waiting"))
        server.send(session, "a haiku")
        asked = form_of(server.wait_for(session, count("turn.waiting", 2)))
        # sampling="ask": a person allows the server's use of the model, here not at all
        assert asked["purpose"] == "sampling" and asked["schema"] == {}
        assert "A haiku about rain" in asked["message"]
        assert server.post(f"/session/{session}/cancel").status_code == 202
        events = server.wait_for(session, count("session.waiting", 2))
    finally:
        server.stop()
    assert results(events) == [
        "not booked: decline",
        "refused: MCPError: User rejected sampling request: a person answered cancel",
    ]
    assert "turn.cancelled" in types(events)
    options = [e["data"]["option_id"] for e in events if e["type"] == "input.resolved"]
    assert options == ["decline", "cancelled"]


def test_a_restart_mid_form_does_not_send_the_call_again(make_app: AppFactory) -> None:
    root = asking_app(make_app, [call("asking__book"), say("sorry")])
    server = Server(root).start()
    try:
        session = server.create("book a room")
        form = form_of(server.wait_for(session, count("turn.waiting")))
        server.kill()  # the server's request died with the connection
        server.restart()
        events = server.wait_for(session, count("session.waiting"))
        late = answer(server, session, form, "decline")
    finally:
        server.stop()
    assert late.status_code == 409, "the form closed with the turn's first run"
    assert (root / "counted").read_text() == "book\n", "the server got the call once"
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert result["status"] == "failed"
    assert result["output"].startswith("MCPCallInterrupted: connection 'asking': the turn")
    assert "it is not called again" in result["output"]
    resolved = [e["data"] for e in events if e["type"] == "input.resolved"]
    assert [(r["request_id"], r["option_id"]) for r in resolved] == [
        (form["request_id"], "cancelled")
    ]
    assert [e["data"]["message"] for e in events if e["type"] == "message.completed"] == ["sorry"]
