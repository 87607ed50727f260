"""Back-pressure: over ``EVE_MAX_QUEUED_TURNS`` waiting turns a message is refused at once
with 503 ``queue_full`` and ``Retry-After``; nothing of it is accepted."""

from __future__ import annotations

import sqlite3
import time

import pytest

from eve.errors import ServerConfigError
from eve.sessions import admission
from eve.sessions.admission import Admission
from eve.sessions.settings import SESSIONS_DIR, max_queued_turns
from tests.conftest import AppFactory, wait_for_file
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer


def test_a_message_over_the_queue_limit_is_refused_with_retry_after(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every request counts the queue afresh, so the test sees each turn it queued
    monkeypatch.setattr(admission, "FRESH_SECONDS", 0.0)
    responses = [call("hold"), say("held"), say("one"), say("two")]
    root = scripted_app(make_app, responses, tools=("hold",))
    server = InProcessServer(root, env={"EVE_MAX_QUEUED_TURNS": "2"}).start()
    try:
        session = server.create("hold on")
        wait_for_file(root / f"hold-{session}.started")  # running: it does not count
        keyed = {"Idempotency-Key": "second"}
        assert server.post(f"/session/{session}", {"message": "1"}).status_code == 202
        second = server.post(f"/session/{session}", {"message": "2"}, headers=keyed)
        assert second.status_code == 202
        refused = server.send(session, "3")
        another = server.post("/session", {"message": "a new session"})
        # a repeat of an accepted request is answered as before, full or not
        replayed = server.post(f"/session/{session}", {"message": "2"}, headers=keyed)
        # a session that takes no message says so, full or not
        unknown = server.send("ses_unknown", "4")
        (root / "release").write_text("go")
        events = server.wait_for(session, count("session.waiting", 3))
    finally:
        server.stop()
    for answer in (refused, another):
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == str(admission.RETRY_AFTER_SECONDS)
        body = answer.json()
        assert body["code"] == "queue_full"
        assert "2 turns wait" in body["error"] and "EVE_MAX_QUEUED_TURNS" in body["error"]
    assert (replayed.status_code, replayed.json()["turnId"]) == (202, "turn_2")
    assert (unknown.status_code, unknown.json()["code"]) == (409, "session_not_active")
    received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
    assert received == ["hold on", "1", "2"]  # the refused one was not accepted


def test_turns_accepted_but_not_yet_delivered_to_the_queue_count_too(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 202 comes before its turn reaches DBOS's queue: while DBOS's file is locked, the
    accepted turns wait in eve's table, and they count against the limit all the same."""
    monkeypatch.setattr(admission, "FRESH_SECONDS", 0.0)
    root = scripted_app(make_app, [say("one"), say("two")])
    env = {"EVE_MAX_QUEUED_TURNS": "2", "EVE_SQLITE_BUSY_TIMEOUT": "0.5"}
    server = InProcessServer(root, env=env).start()
    holder = sqlite3.connect(root / SESSIONS_DIR / "dbos.sqlite", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # no delivery can reach the queue
        first = server.post("/session", {"message": "one"})
        second = server.post("/session", {"message": "two"})
        refused = server.post("/session", {"message": "three"})
        holder.execute("ROLLBACK")
        for answer in (first, second):
            assert answer.status_code == 202, answer.text
            server.wait_for(answer.json()["sessionId"], count("session.waiting"))
    finally:
        holder.close()
        server.stop()
    assert refused.status_code == 503, refused.text
    assert refused.json()["code"] == "queue_full"


def test_steps_waiting_for_the_worker_s_compute_count_too(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn starts at once, so a saturated worker's backlog waits for a ``--concurrency``
    permit, not in a queue: those steps count against the limit too."""
    monkeypatch.setattr(admission, "FRESH_SECONDS", 0.0)
    responses = [call("hold"), say("held"), say("two"), say("three")]
    root = scripted_app(make_app, responses, tools=("hold",))
    server = InProcessServer(root, concurrency=1, env={"EVE_MAX_QUEUED_TURNS": "2"}).start()
    try:
        holding = server.create("hold on")
        wait_for_file(root / f"hold-{holding}.started")  # the one permit is taken
        waiting = [server.post("/session", {"message": m}) for m in ("two", "three")]
        gate = server.http.app.state.service.runtime.gate  # type: ignore[union-attr]
        deadline = time.monotonic() + 30
        while gate.waiting < 2:  # both turns started, and wait for the permit
            assert time.monotonic() < deadline, gate.waiting
            time.sleep(0.01)
        refused = server.post("/session", {"message": "four"})
        (root / "release").write_text("go")
        for answer in waiting:
            assert answer.status_code == 202, answer.text
            server.wait_for(answer.json()["sessionId"], count("session.waiting"))
    finally:
        server.stop()
    assert refused.status_code == 503, refused.text
    assert "2 turns wait" in refused.json()["error"]


async def test_a_turn_that_starts_while_the_queue_is_counted_counts_once() -> None:
    """The places not started are counted in a thread; a turn that starts meanwhile and
    waits for a permit is in the count's snapshot, and was counted at the gate too: with one
    turn waiting, a message was refused as "2 turns wait" (the compute test above, once in
    a loaded suite)."""
    waiting = [0]

    def count() -> int:
        waiting[0] = 1  # the turn counted here starts and waits for a permit meanwhile
        return 1

    door = Admission(2, count, lambda: waiting[0])
    await door.check()  # one turn waits: under the limit, nothing raised


def test_the_queue_limit_is_read_from_the_environment() -> None:
    assert max_queued_turns("") is None and max_queued_turns("off") is None
    assert max_queued_turns(" 500 ") == 500
    for bad in ("0", "-3", "many", "1.5"):
        with pytest.raises(ServerConfigError, match="EVE_MAX_QUEUED_TURNS"):
            max_queued_turns(bad)
