"""``session_timeout_seconds`` is a durable timer (issue 13): an idle session ends on time
with nothing arriving, across a restart of the server, and activity moves the deadline."""

from __future__ import annotations

from datetime import datetime

from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import Event, Server, count, types
from tests.sessions.inprocess import InProcessServer

LIMITS = {"max_turns": 5, "session_timeout_seconds": 1.5}


def at(event: Event) -> float:
    return datetime.fromisoformat(event["meta"]["at"]).timestamp()


def test_an_idle_session_ends_on_its_timer_across_a_restart(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("hello")], limits=LIMITS)
    server = Server(root).start()
    try:
        session = server.create("hi")
        server.wait_for(session, count("session.waiting"))
        server.kill()
        server.restart()
        # nothing is sent: reading the log does not touch the session
        events = server.wait_for(session, count("session.completed"))
        summary = server.get(f"/session/{session}").json()
        refused = server.send(session, "still there?")
    finally:
        server.stop()
    assert types(events)[-2:] == ["session.waiting", "session.completed"]
    [completed] = [e for e in events if e["type"] == "session.completed"]
    assert completed["data"]["reason"] == "session_timeout"
    # not before the session had been idle for the whole timeout
    assert at(completed) - at(events[-2]) >= LIMITS["session_timeout_seconds"]
    assert (summary["status"], summary["endedReason"]) == ("ended", "session_timeout")
    assert refused.status_code == 409 and refused.json()["code"] == "session_not_active"


def test_a_message_moves_the_deadline(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("one"), say("two")], limits=LIMITS)
    server = InProcessServer(root).start()
    try:
        session = server.create()
        assert server.send(session, "first").status_code == 202
        server.wait_for(session, count("session.waiting"))
        assert server.send(session, "second").status_code == 202
        events = server.wait_for(session, count("session.completed"))
    finally:
        server.stop()
    waiting = [e for e in events if e["type"] == "session.waiting"]
    completed = events[-1]
    assert len(waiting) == 2 and completed["data"]["reason"] == "session_timeout"
    # a session ended only once idle for the timeout after its last turn, however it raced
    assert at(completed) - at(waiting[-1]) >= LIMITS["session_timeout_seconds"]
    assert types(events).count("session.completed") == 1
