"""Deps and dynamic instructions in a durable session (DBOS, in process): the turn's prompt
is a recorded step, so a replay reads it instead of evaluating instructions.py again, and
the deps object is built and closed by the turn and stored nowhere."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import AppFactory
from tests.sessions.apps import call, say
from tests.sessions.harness import count, script
from tests.sessions.inprocess import InProcessServer
from tests.sessions.records import step_records
from tests.sessions.test_secrets import stored_values

#: an attribute of the deps object no output shows: it must reach no table or file
MARKER = "deps-only-marker-7f3a"

FILES = {
    "agent/agent.py": f"""
        from pathlib import Path
        from eve import define_agent

        class Shop:
            def __init__(self, info):
                self.marker = "{MARKER}"
                self.customer = info.principal.id
                Path("deps.log").open("a").write(f"open {{info.turn_id}}\\n")

            def close(self):
                Path("deps.log").open("a").write("close\\n")

        default = define_agent(model="offline/script:script.json", deps=Shop)
    """,
    "agent/instructions.md": "Follow the script.\n",
    "agent/instructions.py": """
        from eve import define_instructions

        @define_instructions
        def instructions(ctx) -> str:
            return f"The customer is {ctx.deps.customer}."
    """,
    "agent/tools/whoami.py": """
        from eve.tools import ToolContext, tool

        @tool
        def whoami(ctx: ToolContext) -> str:
            '''Say whom the shop serves.'''
            return f"serving {ctx.deps.customer}"
    """,
}


def test_the_dynamic_prompt_is_a_recorded_step_and_deps_are_never_stored(
    make_app: AppFactory,
) -> None:
    root = make_app(FILES, minimal=False)
    script(root, [call("whoami"), say("done")])
    server = InProcessServer(root).start()
    try:
        session = server.create("who?")
        events = server.wait_for(session, count("session.waiting"))
        steps: list[dict[str, Any]] = step_records(root, f"{session}:turn-0")
    finally:
        server.stop()
    [result] = [e["data"]["output"] for e in events if e["type"] == "action.result"]
    assert result == "serving operator"
    names = [s["function_name"] for s in steps]
    # recorded before the first model call: a replay of the turn reads this record
    assert names.index("instructions.dynamic") < names.index("step:0")
    [prompt] = [s["output"] for s in steps if s["function_name"] == "instructions.dynamic"]
    # a step record (format 2) holds the value with the state after it
    assert json.loads(prompt)["value"] == {"text": "The customer is operator."}
    assert (root / "deps.log").read_text() == "open turn_0\nclose\n"
    for value in stored_values(root):
        assert MARKER.encode() not in value
