"""SIGKILL mid-turn, restart: completed steps are not redone and the log stays whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import AppFactory, wait_for_file
from tests.sessions.harness import Event, Server, assert_dense, count, script, types

#: ``slow`` holds after "started" until the test releases it,
#: so the run the test kills can never finish first, however loaded the machine is
GATED_SLOW = '''
    import asyncio, os
    from pathlib import Path
    from eve.tools import tool

    @tool
    async def slow():
        """Take a while, reporting progress first."""
        with Path("slow.log").open("a") as log:
            log.write(f"{os.getpid()}\\n")
        yield "started"
        Path("slow.started").write_text(str(os.getpid()))
        for _ in range(1200):
            if Path("slow.release").exists():
                break
            await asyncio.sleep(0.05)
        yield "finished"
'''


CRASH_APP = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(model="offline/script:script.json", limits={"max_turns": 5})
    """,
    "agent/tools/count_once.py": """
        from pathlib import Path
        from eve.context import define_state
        from eve.tools import tool

        runs = define_state("runs", 0)

        @tool
        def count_once() -> str:
            '''Record that this tool ran, in a file and in session state.'''
            with Path("count_once.log").open("a") as log:
                log.write("ran\\n")
            return f"state says {runs.update(lambda n: n + 1)}"
    """,
    "agent/tools/slow.py": GATED_SLOW,
    "agent/tools/read_state.py": """
        from eve.tools import tool
        from agent.tools.count_once import runs

        @tool
        def read_state() -> int:
            '''Read the session state count_once keeps.'''
            return runs.get()
    """,
}

RESPONSES = [
    {"tool_calls": [{"name": "count_once"}]},
    {"tool_calls": [{"name": "slow"}]},
    {"text": "all done"},
    {"tool_calls": [{"name": "read_state"}]},
    {"text": "state read"},
]


def crash_app(
    make_app: AppFactory,
    extra: dict[str, str] | None = None,
    responses: list[dict[str, Any]] | None = None,
) -> Path:
    """The crash app, with ``extra`` files and another script if given."""
    root = make_app({**CRASH_APP, **(extra or {})}, minimal=False)
    (root / "agent/instructions.md").write_text("Do the steps.\n")
    script(root, RESPONSES if responses is None else responses)
    return root


def crash_mid_slow_tool(server: Server) -> str:
    """Start the scripted turn, SIGKILL the server inside ``slow``, restart; the session id."""
    session = server.create("go")
    wait_for_file(server.app_root / "slow.started")
    server.wait_for(session, count("action.partial"))  # the first run's progress is durable
    server.kill()
    (server.app_root / "slow.started").unlink()
    (server.app_root / "slow.release").write_text("go on")
    server.restart()
    return session


def assert_finished_once(root: Path, events: list[Event], log: str) -> list[int]:
    """The turn completed whole and ``count_once`` ran once; the pids ``slow`` ran in."""
    assert (root / "count_once.log").read_text() == "ran\n", log
    assert_dense(events)
    assert types(events).count("turn.completed") == 1, log
    assert types(events).count("step.started") == 3, log
    results = [e["data"] for e in events if e["type"] == "action.result"]
    assert [r["name"] for r in results] == ["count_once", "slow"]
    assert results[0]["output"] == "state says 1"
    partials = [e["data"] for e in events if e["type"] == "action.partial"]
    # the first run's "started", then the re-run's, marked as a retry
    assert [p.get("attempt", 0) for p in partials] == [0, 1, 1]
    assert [p["partial"] for p in partials] == ["started", "started", "finished"]
    final = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert final == ["all done"]
    assert types(events)[-1] == "session.waiting"
    return [int(line) for line in (root / "slow.log").read_text().splitlines()]


def test_sigkill_mid_tool_then_restart_finishes_the_turn_once(make_app: AppFactory) -> None:
    root = crash_app(make_app)
    server = Server(root).start()
    try:
        session = crash_mid_slow_tool(server)
        events = server.wait_for(session, count("session.waiting"))
    finally:
        log = server.stop()

    # the interrupted step ran again, in the restarted process
    assert len(assert_finished_once(root, events, log)) == 2


def test_state_survives_the_crash_into_the_next_turn(make_app: AppFactory) -> None:
    root = crash_app(make_app)
    server = Server(root).start()
    try:
        session = crash_mid_slow_tool(server)
        server.wait_for(session, count("session.waiting"))
        assert server.send(session, "read it").status_code == 202
        events = server.wait_for(session, count("session.waiting", 2))
    finally:
        server.stop()
    reads = [
        e["data"]
        for e in events
        if e["type"] == "action.result" and e["data"]["name"] == "read_state"
    ]
    assert reads[0]["output"] == "1"
