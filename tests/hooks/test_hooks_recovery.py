"""Hooks across a crash: state they keep is exactly-once, their other effects at-least-once.

A recovered turn runs its body again, and its hooks with it, from the state of the last
durable record; a step that was recorded is not run again, so neither are the hooks of the
events inside it. See docs/hooks.md, "Hooks and recovery".
"""

from __future__ import annotations

import json

from tests.conftest import AppFactory
from tests.sessions.harness import Server, count
from tests.sessions.test_crash_recovery import RESPONSES, crash_app, crash_mid_slow_tool

TALLY = {
    "agent/hooks/tally.py": """
        from pathlib import Path
        from eve.context import define_state
        from eve.hooks import define_hook

        tally = define_state("tally", {})

        def on_event(event):
            # a side effect outside session state: it happens again when the body replays
            with Path("tally.log").open("a") as log:
                log.write(event.type + "\\n")
            tally.update(lambda t: {**t, event.type: t.get(event.type, 0) + 1})

        default = define_hook(
            events={
                name: on_event
                for name in ("turn.started", "step.started", "action.result", "turn.completed")
            }
        )
    """,
    "agent/tools/tally_so_far.py": """
        from agent.hooks.tally import tally
        from eve.tools import tool

        @tool
        def tally_so_far() -> dict:
            '''What the tally hook counted in this session.'''
            return dict(tally.get())
    """,
}


def test_a_crash_mid_turn_neither_loses_nor_doubles_hook_state(make_app: AppFactory) -> None:
    tally_turn = [{"tool_calls": [{"name": "tally_so_far"}]}, {"text": "ok"}]
    root = crash_app(make_app, TALLY, [*RESPONSES[:3], *tally_turn])
    server = Server(root).start()
    try:
        session = crash_mid_slow_tool(server)
        server.wait_for(session, count("session.waiting"))
        assert server.send(session, "tally").status_code == 202
        events = server.wait_for(session, count("session.waiting", 2))
    finally:
        log = server.stop()
    [read] = [
        json.loads(e["data"]["output"])
        for e in events
        if e["type"] == "action.result" and e["data"]["name"] == "tally_so_far"
    ]
    # turn 0: started once, three steps, two results, completed once; turn 1 so far:
    # started, its first step (the tool reads the tally before its own result)
    assert read == {
        "turn.started": 2,
        "step.started": 4,
        "action.result": 2,
        "turn.completed": 1,
    }, log
    lines = (root / "tally.log").read_text().splitlines()
    # the killed process's hooks ran too: turn 0's body events before the crash twice
    assert lines.count("turn.started") == 3
    assert lines.count("step.started") > 4
    assert "hook.failed" not in [e["type"] for e in events]
