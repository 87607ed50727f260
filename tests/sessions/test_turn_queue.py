"""Messages sent while a turn runs wait their turn, in order; cancel and reset."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.conftest import AppFactory, wait_for_file
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import count, types
from tests.sessions.inprocess import InProcessServer


def test_messages_during_a_turn_run_after_it_in_order(make_app: AppFactory) -> None:
    responses = []
    for n in range(4):
        responses += [call("slowly", seconds=0.3), say(f"reply {n}")]
    server = InProcessServer(scripted_app(make_app, responses, tools=("slowly",))).start()
    try:
        session = server.create("message 0")
        turn_ids = [server.send(session, f"message {n}").json()["turnId"] for n in (1, 2, 3)]
        assert turn_ids == ["turn_1", "turn_2", "turn_3"]
        events = server.wait_for(session, count("session.waiting", 4))
    finally:
        server.stop()
    received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
    assert received == ["message 0", "message 1", "message 2", "message 3"]
    replies = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert replies == ["reply 0", "reply 1", "reply 2", "reply 3"]
    # turns never overlap: each starts after the previous one completed
    lifecycle = [t for t in types(events) if t in ("turn.started", "turn.completed")]
    assert lifecycle == ["turn.started", "turn.completed"] * 4


def test_concurrent_sends_are_each_run_exactly_once(make_app: AppFactory) -> None:
    responses = [say(f"reply {n}") for n in range(8)]
    server = InProcessServer(scripted_app(make_app, responses)).start()
    try:
        session = server.create()
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda n: server.send(session, f"m{n}").status_code, range(8)))
        assert statuses == [202] * 8
        events = server.wait_for(session, count("session.waiting", 8))
    finally:
        server.stop()
    received = sorted(e["data"]["message"] for e in events if e["type"] == "message.received")
    assert received == sorted(f"m{n}" for n in range(8))
    assert types(events).count("turn.completed") == 8


def test_cancel_stops_the_running_turn_and_the_session_goes_on(make_app: AppFactory) -> None:
    responses = [call("slowly", seconds=30), say("never"), say("after cancel")]
    root = scripted_app(make_app, responses, tools=("slowly",))
    server = InProcessServer(root).start()
    try:
        session = server.create("wait")
        wait_for_file(root / f"slowly-{session}.started")
        response = server.post(f"/session/{session}/cancel")
        assert (response.status_code, response.json()["status"]) == (202, "cancelling")
        server.wait_for(session, count("session.waiting"))
        server.send(session, "hello again")
        events = server.wait_for(session, count("session.waiting", 2))
    finally:
        server.stop()
    assert types(events).count("turn.cancelled") == 1
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert result["output"] == "stopped early"


def test_reset_clears_history_and_state(make_app: AppFactory) -> None:
    responses = [call("leak"), say("counted")]
    server = InProcessServer(scripted_app(make_app, responses, tools=("leak",))).start()
    try:
        session = server.create("count")
        server.wait_for(session, count("session.waiting"))
        assert server.post(f"/session/{session}/reset").json()["status"] == "reset"
        server.wait_for(session, count("session.reset"))
        # the script starts over only if the history is empty again
        server.send(session, "count again")
        events = server.wait_for(session, count("session.waiting", 2))
    finally:
        server.stop()
    outputs = [e["data"]["output"] for e in events if e["type"] == "action.result"]
    assert outputs == [
        '{"module_global":1,"session_state":1}',
        '{"module_global":2,"session_state":1}',
    ]


def test_turns_run_in_the_order_their_messages_were_accepted(make_app: AppFactory) -> None:
    """Messages sent at once to one session: each turn runs after every turn numbered
    before it (issue 12 saw turn 0, 2, 1 when a number was taken before the enqueue)."""
    sessions, per_session = 30, 4
    responses = [say("ok") for _ in range(sessions * per_session)]
    server = InProcessServer(scripted_app(make_app, responses)).start()
    try:
        ids = [server.create() for _ in range(sessions)]
        sends = [(s, f"{s}-{n}") for s in ids for n in range(per_session)]
        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(lambda sm: (sm[1], server.send(*sm).json()), sends))
        events = {s: server.wait_for(s, count("session.waiting", per_session)) for s in ids}
    finally:
        server.stop()
    turn_of = {message: int(body["turnId"].removeprefix("turn_")) for message, body in answers}
    for session, log in events.items():
        received = [e["data"]["message"] for e in log if e["type"] == "message.received"]
        assert [turn_of[m] for m in received] == list(range(per_session)), session
