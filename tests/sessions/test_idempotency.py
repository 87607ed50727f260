"""``Idempotency-Key``: a repeated POST gets the first answer and does nothing twice."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import Server, count, types
from tests.sessions.inprocess import InProcessServer


def error_of(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["code"]


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


@pytest.fixture
def server(make_app: AppFactory) -> Iterator[InProcessServer]:
    running = InProcessServer(scripted_app(make_app, [say(f"r{n}") for n in range(8)])).start()
    try:
        yield running
    finally:
        running.stop()


def test_a_repeated_create_answers_the_same_session_and_runs_one_turn(
    server: InProcessServer,
) -> None:
    first = server.post("/session", {"message": "hi"}, headers=keyed("create-1"))
    again = server.post("/session", {"message": "hi"}, headers=keyed("create-1"))
    assert first.status_code == again.status_code == 202
    assert first.json() == again.json()
    assert "idempotent-replayed" not in first.headers
    assert again.headers["idempotent-replayed"] == "true"
    session = first.json()["sessionId"]
    events = server.wait_for(session, count("session.waiting"))
    assert types(events).count("session.started") == 1
    other = server.post("/session", {"message": "hi"}, headers=keyed("create-2"))
    assert other.json()["sessionId"] != session
    server.wait_for(other.json()["sessionId"], count("session.waiting"))
    assert types(server.events(session)).count("turn.started") == 1


def test_repeated_messages_queue_one_turn_even_sent_at_once(server: InProcessServer) -> None:
    session = server.create()
    path = f"/session/{session}"
    with ThreadPoolExecutor(6) as pool:
        answers = list(
            pool.map(lambda _: server.post(path, {"message": "m"}, headers=keyed("k")), range(6))
        )
    assert {(a.status_code, a.json()["turnId"]) for a in answers} == {(202, "turn_0")}
    assert sum(a.headers.get("idempotent-replayed") == "true" for a in answers) == 5
    # the key is scoped by session: the same key on another session is another request
    elsewhere = server.create()
    assert server.post(f"/session/{elsewhere}", {"message": "m"}, headers=keyed("k")).json()[
        "turnId"
    ] == ("turn_0")
    nxt = server.post(path, {"message": "m2"}, headers=keyed("k2"))
    assert nxt.json()["turnId"] == "turn_1"
    events = server.wait_for(session, count("session.waiting", 2))
    received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
    assert received == ["m", "m2"]


def test_a_key_reused_with_another_body_or_malformed_is_refused(server: InProcessServer) -> None:
    session = server.create()
    path = f"/session/{session}"
    assert server.post(path, {"message": "a"}, headers=keyed("same")).status_code == 202
    reused = server.post(path, {"message": "b"}, headers=keyed("same"))
    assert error_of(reused) == (422, "idempotency_key_reused")
    answer = {"inputResponses": [{"requestId": "inp_x", "optionId": "approve"}]}
    assert error_of(server.post(path, answer, headers=keyed("same"))) == (
        422,
        "idempotency_key_reused",
    )
    for bad in (b"", b"x" * 256, "clé".encode(), b"a\tb"):
        response = server.post(path, {"message": "a"}, headers={b"Idempotency-Key": bad})
        assert error_of(response) == (400, "idempotency_key_invalid")
    server.wait_for(session, count("session.waiting"))
    assert types(server.events(session)).count("turn.started") == 1


def test_the_first_answer_survives_a_killed_server(make_app: AppFactory) -> None:
    """The 202 is lost with the process: the client's retry, after the restart, gets it."""
    server = Server(scripted_app(make_app, [say("one"), say("two")])).start()
    try:
        created = server.post("/session", {"message": "a"}, headers=keyed("c"))
        session = created.json()["sessionId"]
        sent = server.post(f"/session/{session}", {"message": "b"}, headers=keyed("s"))
        server.kill()
        server.start()
        assert server.post("/session", {"message": "a"}, headers=keyed("c")).json() == (
            created.json()
        )
        again = server.post(f"/session/{session}", {"message": "b"}, headers=keyed("s"))
        assert again.json() == sent.json() and again.headers["idempotent-replayed"] == "true"
        events = server.wait_for(session, count("session.waiting", 2))
    finally:
        server.stop()
    received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
    assert received == ["a", "b"]
