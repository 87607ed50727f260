"""Fifty sessions at once on one server: every turn finishes, nothing lost or crossed."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import assert_dense, count
from tests.sessions.inprocess import InProcessServer

SESSIONS = 50


def test_fifty_concurrent_sessions(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [call("leak"), say("done")], tools=("leak",))
    server = InProcessServer(root).start()
    try:
        with ThreadPoolExecutor(10) as pool:
            sessions = list(pool.map(lambda n: (n, server.create(f"hello {n}")), range(SESSIONS)))
            logs = list(
                pool.map(
                    lambda pair: (pair[0], server.wait_for(pair[1], count("session.waiting"), 120)),
                    sessions,
                )
            )
    finally:
        server.stop()
    globals_seen = []
    for n, events in logs:
        assert_dense(events)
        received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
        assert received == [f"hello {n}"]
        [result] = [e["data"]["output"] for e in events if e["type"] == "action.result"]
        assert '"session_state":1' in result
        globals_seen.append(result)
        assert [e["data"]["message"] for e in events if e["type"] == "message.completed"] == [
            "done"
        ]
    # the module global was shared by all fifty; each session's state was its own
    assert sorted(int(r.split(":")[1].split(",")[0]) for r in globals_seen) == list(
        range(1, SESSIONS + 1)
    )
