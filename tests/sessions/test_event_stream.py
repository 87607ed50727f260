"""Following the event log: reconnecting with the last index sees no gap and no duplicate."""

from __future__ import annotations

import json

from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Driver, Event, assert_dense
from tests.sessions.inprocess import InProcessServer


def follow(server: Driver, session: str, start: int, stop_after: int | None) -> list[Event]:
    """Read the live stream from ``start``; leave after ``stop_after`` events or the turn."""
    seen: list[Event] = []
    with server.stream(f"/session/{session}/stream?startIndex={start}") as response:
        assert response.headers["content-type"].startswith("application/x-ndjson")
        for line in response.iter_lines():
            if not line:
                continue
            seen.append(json.loads(line))
            if len(seen) == stop_after or seen[-1]["type"] == "session.waiting":
                break
    return seen


def test_reconnecting_from_the_last_index_loses_and_repeats_nothing(make_app: AppFactory) -> None:
    responses = [call("slowly", seconds=0.2), call("slowly", seconds=0.2), say("a b c d e f g")]
    server = InProcessServer(scripted_app(make_app, responses, tools=("slowly",))).start()
    try:
        session = server.create("go")
        collected: list[Event] = []
        while not collected or collected[-1]["type"] != "session.waiting":
            start = collected[-1]["meta"]["index"] + 1 if collected else 0
            collected += follow(server, session, start, stop_after=3)
        everything = server.events(session)
    finally:
        server.stop()
    assert_dense(collected)
    assert collected == everything


def test_follow_false_is_a_bounded_read_from_any_index(make_app: AppFactory) -> None:
    server = InProcessServer(scripted_app(make_app, [say("hello there")])).start()
    try:
        session = server.create("hi")
        everything = follow(server, session, 0, stop_after=None)
        tail = server.events(session, start=5)
        beyond = server.events(session, start=10_000)
    finally:
        server.stop()
    assert tail == everything[5:]
    assert beyond == []
