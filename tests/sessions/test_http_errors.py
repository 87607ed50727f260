"""Each HTTP error the session API answers with: status, code and a message that says why."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from eve.manifest import MANIFEST_PATH
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer


@pytest.fixture
def server(make_app: AppFactory) -> Iterator[InProcessServer]:
    running = InProcessServer(scripted_app(make_app, [say("hello")] * 4)).start()
    yield running
    running.stop()


#: raw bytes go as JSON: any other content type is refused before the body is read
JSON = {"content-type": "application/json"}


def error_of(response: httpx.Response) -> tuple[int, str]:
    body = response.json()
    assert body["ok"] is False and body["error"]
    return response.status_code, body["code"]


def test_health_and_info(server: InProcessServer) -> None:
    assert server.get("/health").json() == {"ok": True, "status": "ready"}
    info = server.get("/info").json()
    assert info["kind"] == "eve-agent-info" and info["status"] == "fresh"


def test_create_answers_202_with_the_id_in_body_and_header(server: InProcessServer) -> None:
    response = server.post("/session", {})
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "accepted" and "turnId" not in body
    assert response.headers["x-eve-session-id"] == body["sessionId"]
    # ≥ 128 random bits: "ses_" and 32 url-safe characters (6 bits each)
    assert body["sessionId"].startswith("ses_") and len(body["sessionId"]) >= 4 + 22
    assert server.events(body["sessionId"])[0]["type"] == "session.started"


def test_malformed_bodies_are_400(server: InProcessServer) -> None:
    session = server.create()
    assert error_of(server.post("/session", content=b"{not json", headers=JSON)) == (
        400,
        "invalid_body",
    )
    assert error_of(server.post("/session", {"message": 7})) == (400, "invalid_body")
    assert error_of(server.post("/session", {"mesage": "typo"})) == (400, "invalid_body")
    both = {"message": "hi", "inputResponses": [{"requestId": "r", "optionId": "approve"}]}
    assert error_of(server.post(f"/session/{session}", both)) == (400, "invalid_body")
    assert error_of(server.post(f"/session/{session}", {})) == (400, "invalid_body")
    steer = {"message": "hi", "turnPolicy": "steer"}
    assert error_of(server.post(f"/session/{session}", steer)) == (400, "invalid_body")


def test_oversized_body_and_message_are_413(server: InProcessServer) -> None:
    # the limit leaves room for attachments (in base64) beside a message at its length limit
    body = b'{"message": "' + b"x" * 16_100_000 + b'"}'
    assert error_of(server.post("/session", content=body, headers=JSON)) == (413, "body_too_large")
    long_message = server.post("/session", {"message": "x" * 100_001})
    assert error_of(long_message) == (413, "message_too_long")


def test_deeply_nested_bodies_are_a_named_400(server: InProcessServer) -> None:
    session = server.create()
    task = f"/session/{session}/tasks/{session}:turn-0:task-0-c/events"
    for depth in (65, 490, 5_000):
        deep = b'{"name": "go", "data": ' + b"[" * depth + b"]" * depth + b"}"
        assert error_of(server.post(task, content=deep, headers=JSON)) == (400, "body_too_deep")
        # unclosed brackets are refused before the decoder recurses into them too
        assert error_of(server.post(task, content=b'{"data": ' + b"{" * depth, headers=JSON)) == (
            400,
            "body_too_deep",
        )
    # brackets inside strings nest nothing; 64 levels are accepted as far as the body goes
    flat = {"name": "go", "data": "[" * 5_000 + '\\"' + "{" * 100}
    assert error_of(server.post(task, flat)) == (409, "task_not_waiting")
    nested: object = "leaf"
    for _ in range(63):
        nested = [nested]
    assert error_of(server.post(task, {"name": "go", "data": nested})) == (409, "task_not_waiting")


def test_unknown_sessions(server: InProcessServer) -> None:
    assert error_of(server.send("ses_nope", "hi")) == (409, "session_not_active")
    assert error_of(server.post("/session/ses_nope/reset")) == (409, "session_not_active")
    assert error_of(server.post("/session/ses_nope/cancel")) == (409, "session_not_active")
    stream = server.get("/session/ses_nope/stream?follow=false")
    assert error_of(stream) == (404, "session_not_found")


def test_bad_start_index_is_400(server: InProcessServer) -> None:
    session = server.create()
    # "²" and "٣" pass str.isdigit; a 20-digit index is past what a database column holds
    for bad in ("-1", "x", "1.5", "²", "٣", "", "9" * 20, "9" * 5000):
        response = server.get(f"/session/{session}/stream", params={"startIndex": bad})
        assert error_of(response) == (400, "invalid_start_index"), bad
    padded = server.get(f"/session/{session}/stream?startIndex=0001&follow=false")
    assert padded.status_code == 200 and padded.text == ""


def test_answers_to_requests_that_do_not_wait_are_409(server: InProcessServer) -> None:
    session = server.create("hi")
    server.wait_for(session, count("session.waiting"))
    answer = {"inputResponses": [{"requestId": "inp_unknown", "optionId": "approve"}]}
    assert error_of(server.post(f"/session/{session}", answer)) == (
        409,
        "input_request_not_pending",
    )


def test_cancel_without_a_running_turn_is_200(server: InProcessServer) -> None:
    session = server.create()
    response = server.post(f"/session/{session}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "no_active_turn"


def test_ended_session_is_409(make_app: AppFactory) -> None:
    root = scripted_app(
        make_app, [say("one")], limits={"max_turns": 3, "max_output_tokens_per_session": 1}
    )
    server = InProcessServer(root).start()
    try:
        session = server.create("hi")
        # the limit parks the turn; a person ends the session on it
        parked = server.wait_for(session, count("turn.waiting"))
        [asked] = [e for e in parked if e["type"] == "input.requested"]
        server.answer(session, asked["data"]["requests"][0]["request_id"], "end")
        events = server.wait_for(session, count("session.completed"))
        assert events[-1]["data"]["reason"] == "max_output_tokens_per_session"
        code = error_of(server.send(session, "again"))
        assert code == (409, "session_not_active")
        assert "max_output_tokens_per_session" in server.send(session, "again").json()["error"]
    finally:
        server.stop()


def test_session_timeout_ends_the_session(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("one")], limits={"session_timeout_seconds": 0.5})
    server = InProcessServer(root).start()
    try:
        session = server.create()
        # nothing arrives: the idle timer ends it (test_idle_timeout.py)
        server.wait_for(session, count("session.completed"))
        response = server.send(session, "late")
        assert error_of(response) == (409, "session_not_active")
        assert "session_timeout" in response.json()["error"]
    finally:
        server.stop()


def test_an_unexpected_failure_is_a_json_500_and_a_log_entry(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("hi")])
    server = InProcessServer(root).start()
    try:
        # reading the manifest now fails in a way no eve error describes
        (root / MANIFEST_PATH).unlink()
        (root / MANIFEST_PATH).mkdir()
        response = server.get("/info")
        assert server.get("/health").status_code == 200  # and the server goes on
    finally:
        log = server.stop()

    assert response.status_code == 500
    assert response.json() == {
        "ok": False,
        "code": "internal_error",
        "error": "internal error; see the server log",
    }
    assert "GET info: internal error" in log and "IsADirectoryError" in log, log
