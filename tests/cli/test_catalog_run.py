"""eve run and the catalog: a deferred tool reached through eve__tool is shown, asked about
and answered as itself."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory

APP = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(model="offline/script:script.json", limits={"max_turns": 3})
    """,
    "agent/tools/refund.py": """
        from eve.tools import tool
        from eve.tools.approval import always

        @tool(deferred=True, approval=always())
        def refund(order_number: int) -> str:
            '''Refund an order (a person approves every refund).'''
            return f"refunded order {order_number}"
    """,
}
SCRIPT = [
    {
        "tool_calls": [
            {"name": "eve__tool", "input": {"name": "refund", "input": {"order_number": 7}}}
        ]
    },
    {"text": "done"},
]


def refund_app(make_app: AppFactory) -> Path:
    root = make_app(APP)
    (root / "script.json").write_text(json.dumps(SCRIPT))
    return root


def test_without_yes_the_deferred_tool_is_refused_by_its_own_name(make_app: AppFactory) -> None:
    root = refund_app(make_app)
    done = eve_run(root, "refund order 7", "--session", "s.jsonl")
    assert done.returncode == 0, done.stderr
    assert "→ refund(order_number=7)" in done.stderr
    assert "⊘ refund needs approval; pass --yes to allow" in done.stderr
    assert "⊘ refund: refund needs approval and a person denied this call" in done.stderr
    [result] = [
        m
        for m in map(json.loads, (root / "s.jsonl").read_text().splitlines())
        if m["role"] == "tool"
    ]
    assert (result["name"], result["is_error"], result["tool_call_id"]) == (
        "refund",
        True,
        "call_0_0",
    )


def test_with_yes_it_runs_and_the_events_name_it(make_app: AppFactory) -> None:
    root = refund_app(make_app)
    done = eve_run(root, "refund order 7", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [requested] = [e["data"]["actions"] for e in events if e["type"] == "actions.requested"]
    assert requested == [
        {"call_id": "call_0_0", "name": "refund", "input": {"order_number": 7}, "via": "eve__tool"}
    ]
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert (result["name"], result["status"], result["output"]) == (
        "refund",
        "completed",
        "refunded order 7",
    )
