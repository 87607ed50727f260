"""An MCP tool's approval parked across an ``eve serve`` SIGKILL and restart."""

from __future__ import annotations

import uuid

from tests.conftest import AppFactory
from tests.connections.servers import STDIO_COMMAND, servers_tagged, wait_until_gone
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Server, assert_dense, count, types
from tests.sessions.test_approvals import request_of

CONNECTION = """
from eve.connections import define_mcp_connection
from eve.tools.approval import always

default = define_mcp_connection(
    description="Arithmetic on a test server.",
    command={command!r},
    tools=["add"],
    approval=always(),
    expose="tools",
)
"""


def test_an_mcp_tools_approval_parks_across_a_kill_and_runs_once(make_app: AppFactory) -> None:
    # a marker on the server's command line finds the processes this test's servers started
    marker = f"eve-test-{uuid.uuid4().hex}"
    root = scripted_app(make_app, [call("calc__add", a=2, b=3), say("five")])
    connection = CONNECTION.format(command=[*STDIO_COMMAND, "stdio", marker])
    (root / "agent" / "connections").mkdir()
    (root / "agent" / "connections" / "calc.py").write_text(connection)
    server = Server(root).start()
    try:
        session = server.create("add 2 and 3")
        request = request_of(server.wait_for(session, count("turn.waiting")))
        assert request["kind"] == "tool-approval" and request["tool_name"] == "calc__add"
        assert request["input"] == {"a": 2, "b": 3}
        assert servers_tagged(marker), "the turn listed its tools from a running server"
        server.kill()
        # the killed server's stdio child sees its stdin close and exits with it
        assert wait_until_gone(marker) == []
        server.restart()
        server.answer(session, request["request_id"], "approve")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    results = [e["data"] for e in events if e["type"] == "action.result"]
    assert [(r["name"], r["connection"]) for r in results] == [("calc__add", "calc")]
    assert "5" in str(results[0]["output"]) and not results[0].get("is_error")
    assert types(events).count("connection.failed") == 0
    assert types(events).count("turn.completed") == 1
    assert_dense(events)
    # a graceful stop closes the pool, which ends the server's process group
    assert wait_until_gone(marker) == []
