"""Parked work holds nothing: parked sessions, however many, never delay a new one."""

from __future__ import annotations

import time

import pytest
from dbos import DBOS

from eve.sessions import engine, turn_queue
from eve.sessions.engine import TURN_QUEUE
from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer

PARKED = 1_000


@DBOS.workflow(name="tests.parked")
async def parked_turn(session_id: str) -> None:
    """What a parked turn is to the queue, without the steps before its park: a workflow
    of the session's partition waiting in a recv (cheap, so a thousand take seconds)."""
    await DBOS.recv_async("input", timeout_seconds=600)


def park(session_id: str) -> None:
    options = {
        "workflow_name": "tests.parked",
        "queue_name": TURN_QUEUE,
        "workflow_id": f"{session_id}:turn-0",
        "queue_partition_key": session_id,
    }
    DBOS.enqueue_workflow_with_options(options, session_id)  # type: ignore[arg-type]


def wait_until_running(n: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        found = DBOS.list_workflows(name="tests.parked", status="PENDING", load_input=False)
        if len(found) >= n:
            return
        # a bound on failing, not a measure: the admitted number stops growing if the
        # queue holds parked sessions back
        assert time.monotonic() < deadline, f"only {len(found)} of {n} parked turns admitted"
        time.sleep(0.1)


def test_a_thousand_parked_sessions_do_not_delay_a_new_one(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--concurrency 10``: issue 12 saw the 11th session's turn wait for a parked one."""
    # eve's own poll on SQLite, not the tests' quicker one (tests/forkserver.py): DBOS
    # queries once per waiting recv at every poll, a thousand of them here
    monkeypatch.setattr(engine, "SQLITE_POLL_SECONDS", 1.0)
    # the parked turns go on the queue as an older eve's did, for DBOS's own poll of it to
    # start (eve kicks its own pickup, which bypasses that poll): polled every 0.2 s, not
    # every 10 s (a safety net in eve), the test no longer waits most of those 10 s
    monkeypatch.setattr(turn_queue, "POLLING_INTERVAL_SECONDS", 0.2)
    # a new app: its first start declares the queue's row with that poll (tests/session_files.py)
    root = scripted_app(
        make_app, [call("ship", item="anvil"), say("shipped")], tools=("ship",), new_database=True
    )
    server = InProcessServer(root, concurrency=10).start()
    try:
        for n in range(PARKED):
            park(f"ses_parked{n}")
        wait_until_running(PARKED)  # all admitted: the queue holds none of them back
        # real turns parked on an approval, more of them than there are permits
        waiting = [server.create(f"park {n}") for n in range(12)]
        for session in waiting:
            server.wait_for(session, count("turn.waiting"))
        fresh = server.create("park me too")
        parked_log = server.wait_for(fresh, count("turn.waiting"))
        [request] = next(e for e in parked_log if e["type"] == "input.requested")["data"][
            "requests"
        ]
        server.answer(fresh, request["request_id"], "approve")
        done = server.wait_for(fresh, count("session.waiting"))
        still = [server.events(s)[-1]["type"] for s in waiting]
    finally:
        server.stop()
    assert [e["data"]["message"] for e in done if e["type"] == "message.completed"] == ["shipped"]
    # the new session finished while the earlier ones stayed parked
    assert set(still) == {"turn.waiting"}
