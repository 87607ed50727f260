"""SIGKILL mid-turn, restart: the recovered turn sends the prompt its first run evaluated
(instructions.py is not called again) and builds its deps anew in the new process."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import AppFactory, wait_for_file
from tests.hooks.installed import install
from tests.sessions.harness import Server, count
from tests.sessions.test_crash_recovery import GATED_SLOW

#: a model provider (an installed plugin, found by the server process) whose model calls
#: ``slow`` and, once it has its result, answers with the system prompt it was sent
ECHO_SYSTEM = """
from eve.hooks import hookimpl
from eve.messages import ToolResultMessage
from eve.models.events import Done, TextDelta, TokenUsage, ToolCallEnd, ToolCallStart


class EchoSystem:
    model_id = "echo/system"

    async def stream(self, request):
        if any(isinstance(m, ToolResultMessage) for m in request.messages):
            yield TextDelta(text=request.system)
            yield Done(stop_reason="end_turn", usage=TokenUsage())
            return
        yield ToolCallStart(id="call_slow", name="slow")
        yield ToolCallEnd(id="call_slow", name="slow", input={})
        yield Done(stop_reason="tool_use", usage=TokenUsage())


@hookimpl
def eve_model_providers():
    return {"echo": lambda name, *, env, app_root: EchoSystem()}
"""

FILES = {
    "agent/agent.py": """
        import os
        from pathlib import Path
        from eve import define_agent

        class Handle:
            def __init__(self):
                Path("deps.log").open("a").write(f"open {os.getpid()}\\n")

            def close(self):
                Path("deps.log").open("a").write(f"close {os.getpid()}\\n")

        default = define_agent(model="echo/system", deps=Handle)
    """,
    "agent/instructions.md": "Call slow, then say your prompt.\n",
    "agent/instructions.py": """
        import os
        from pathlib import Path
        from eve import define_instructions

        @define_instructions
        def instructions(ctx) -> str:
            Path("instructions.log").open("a").write(f"{os.getpid()}\\n")
            return f"Evaluated in process {os.getpid()}."
    """,
    "agent/tools/slow.py": GATED_SLOW,
}


def test_a_recovered_turn_keeps_its_prompt_and_rebuilds_its_deps(
    make_app: AppFactory, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install(site, "eve_test_echo_system", ECHO_SYSTEM, "echo = eve_test_echo_system")
    root = make_app(FILES, minimal=False)
    server = Server(root, env={"PYTHONPATH": str(site)}).start()
    try:
        session = server.create("go")
        wait_for_file(root / "slow.started")
        first = int((root / "instructions.log").read_text())
        server.kill()
        (root / "slow.release").write_text("go on")
        server.restart()
        events = server.wait_for(session, count("session.waiting"))
    finally:
        log = server.stop()
    [answer] = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert answer == f"Call slow, then say your prompt.\n\nEvaluated in process {first}.\n", log
    # evaluated once, by the first process: the restarted one read the record
    assert (root / "instructions.log").read_text() == f"{first}\n"
    opened = (root / "deps.log").read_text().splitlines()
    second = int(opened[1].split()[1])
    # built in each process; the killed one never closed its own, the new one did
    assert opened == [f"open {first}", f"open {second}", f"close {second}"] and second != first
