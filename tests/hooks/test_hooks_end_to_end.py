"""Hooks through the real doors: ``eve run`` and the HTTP session API of ``eve serve``."""

from __future__ import annotations

import json

from tests.cli.test_run_cli import eve_run_process
from tests.conftest import AppFactory
from tests.sessions.apps import SCRIPTED_AGENT, call, say
from tests.sessions.harness import count, script
from tests.sessions.inprocess import InProcessServer

FILES = {
    "agent/agent.py": SCRIPTED_AGENT.replace("{limits}", repr({"max_turns": 5})),
    "agent/instructions.md": "Follow the script.\n",
    "agent/lib/counts.py": """
        from eve.context import define_state

        counts = define_state("counts", {"sessions": 0, "started": 0, "completed": 0})

        def bump(field):
            counts.update(lambda c: {**c, field: c[field] + 1})
    """,
    "agent/hooks/counter.py": """
        from agent.lib.counts import bump
        from eve.hooks import define_hook

        async def on_turn_completed(event):
            bump("completed")

        default = define_hook(
            events={
                "session.started": lambda event: bump("sessions"),
                "turn.started": lambda event: bump("started"),
                "turn.completed": on_turn_completed,
            }
        )
    """,
    "agent/hooks/flaky.py": """
        from eve.hooks import define_hook

        def on_step(event):
            raise ValueError(f"step {event.data.step_index} is not my day")

        default = define_hook(events={"step.started": on_step})
    """,
    "agent/tools/counts_so_far.py": """
        from agent.lib.counts import counts
        from eve.tools import tool

        @tool
        def counts_so_far() -> dict:
            '''The session's counts.'''
            return dict(counts.get())
    """,
}


def outputs(events: list[dict[str, object]]) -> list[object]:
    return [
        json.loads(str(e["data"]["output"]))  # type: ignore[index]
        for e in events
        if e["type"] == "action.result"
    ]


def test_eve_run_fires_hooks_and_reports_a_failing_one(make_app: AppFactory) -> None:
    root = make_app(FILES, minimal=False)
    (root / "script.json").write_text(json.dumps([call("counts_so_far"), say("done")]))
    # a process of its own: the failing hook reaches stderr through logging's last resort,
    # which pytest's log capture would take in this one
    done = eve_run_process(root, "count", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    # eve run is one turn without a session: no session.started, the turn is the first
    assert outputs(events) == [{"sessions": 0, "started": 1, "completed": 0}]
    failed = [e["data"] for e in events if e["type"] == "hook.failed"]
    assert [(f["hook"], f["event"], f["step_index"]) for f in failed] == [
        ("flaky", "step.started", 0),
        ("flaky", "step.started", 1),
    ]
    assert events[-1]["type"] == "turn.completed"
    assert "agent/hooks/flaky.py" in done.stderr
    assert "ValueError: step 0 is not my day" in done.stderr


def test_hook_state_lasts_across_turns_of_one_http_session(make_app: AppFactory) -> None:
    root = make_app(FILES, minimal=False)
    script(root, [say("first"), call("counts_so_far"), say("second")])
    server = InProcessServer(root).start()
    try:
        session = server.create("one")
        server.wait_for(session, count("session.waiting"))
        assert server.send(session, "two").status_code == 202
        events = server.wait_for(session, count("session.waiting", 2))
    finally:
        log = server.stop()
    assert outputs(events) == [{"sessions": 1, "started": 2, "completed": 1}]
    assert [e["data"]["message"] for e in events if e["type"] == "message.completed"] == [
        "first",
        "second",
    ]
    failed = [e for e in events if e["type"] == "hook.failed"]
    assert len(failed) == 3  # one per step: turn 0 has one, turn 1 two
    assert {f["data"]["source"] for f in failed} == {"agent/hooks/flaky.py"}
    # each report follows the event it is about, in the dense stream
    for report in failed:
        before = events[report["meta"]["index"] - 1]
        assert before["type"] == "step.started"
    assert "hook flaky (agent/hooks/flaky.py) failed on step.started" in log


def test_session_completed_hooks_read_the_state_the_session_ended_with(
    make_app: AppFactory,
) -> None:
    files = {
        **FILES,
        "agent/agent.py": SCRIPTED_AGENT.replace(
            "{limits}", repr({"max_turns": 3, "max_output_tokens_per_session": 1})
        ),
        "agent/hooks/goodbye.py": """
            import json
            from pathlib import Path
            from agent.lib.counts import counts
            from eve.hooks import define_hook

            def on_end(event):
                Path("ended.json").write_text(json.dumps([event.data.reason, counts.get()]))

            default = define_hook(events={"session.completed": on_end})
        """,
    }
    root = make_app(files, minimal=False)
    script(root, [say("one")])
    server = InProcessServer(root).start()
    try:
        session = server.create("hi")
        # the limit parks the turn; a person ends the session on it
        parked = server.wait_for(session, count("turn.waiting"))
        [asked] = [e for e in parked if e["type"] == "input.requested"]
        server.answer(session, asked["data"]["requests"][0]["request_id"], "end")
        events = server.wait_for(session, count("session.completed"))
    finally:
        server.stop()
    assert events[-1]["type"] == "session.completed"
    reason, state = json.loads((root / "ended.json").read_text())
    assert reason == "max_output_tokens_per_session"
    assert state == {"sessions": 1, "started": 1, "completed": 1}
