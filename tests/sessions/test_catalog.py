"""Over HTTP, a catalog call of an approval-gated deferred tool parks as that tool, survives a
restart and runs once, reported under the tool's own name."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import AppFactory
from tests.sessions.apps import SCRIPTED_AGENT, call, say
from tests.sessions.harness import Server, assert_dense, count, script, types

REFUND = """
    from pathlib import Path
    from eve.tools import ToolContext, tool
    from eve.tools.approval import always

    @tool(deferred=True, approval=always())
    def refund(order_number: int, ctx: ToolContext) -> str:
        '''Refund an order (a person approves every refund).'''
        with Path("refunds.log").open("a") as log:
            log.write(f"{order_number} {ctx.tool_name}\\n")
        return f"refunded order {order_number}"
"""


CATALOG_CALL = {"name": "refund", "input": {"order_number": 7}}


def refund_app(make_app: AppFactory) -> Path:
    root = make_app(
        {
            "agent/agent.py": SCRIPTED_AGENT.replace("{limits}", "{'max_turns': 5}"),
            "agent/instructions.md": "Follow the script.\n",
            "agent/tools/refund.py": REFUND,
        },
        minimal=False,
    )
    script(
        root,
        [
            call("eve__search", query="refund an order"),
            # eve__tool's input has a "name", so this call is spelled out
            {"tool_calls": [{"name": "eve__tool", "input": CATALOG_CALL}]},
            say("refunded"),
        ],
    )
    return root


def test_a_catalog_call_parks_as_its_tool_and_runs_once_approved(make_app: AppFactory) -> None:
    root = refund_app(make_app)
    server = Server(root).start()
    try:
        session = server.create("refund order 7")
        parked = server.wait_for(session, count("turn.waiting"))
        [requested] = [e["data"]["requests"] for e in parked if e["type"] == "input.requested"]
        [request] = requested
        assert (request["tool_name"], request["input"]) == ("refund", {"order_number": 7})
        assert (request["call_id"], request["rule"]) == ("call_1_0", "always")
        server.restart()
        assert not (root / "refunds.log").exists()  # nothing ran while it waited
        server.answer(session, request["request_id"], "approve")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    assert (root / "refunds.log").read_text() == "7 refund\n"  # once, and as itself
    assert_dense(events)
    assert types(events).count("input.requested") == 1 and "turn.completed" in types(events)
    actions = [a for e in events if e["type"] == "actions.requested" for a in e["data"]["actions"]]
    assert [(a["name"], a.get("via")) for a in actions] == [
        ("eve__search", None),
        ("refund", "eve__tool"),
    ]
    results = [e["data"] for e in events if e["type"] == "action.result"]
    assert [(r["name"], r["status"]) for r in results] == [
        ("eve__search", "completed"),
        ("refund", "completed"),
    ]
    assert results[1]["output"] == "refunded order 7"
