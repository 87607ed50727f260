"""A turn a request starts runs as the turn's work, not the request's."""

from __future__ import annotations

import textwrap

from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer

#: a tool that says whether its calls would fail fast, as a request's do
NOTE_MODE = '''
    from pathlib import Path
    from eve.sessions.database_errors import failing_fast
    from eve.tools import ToolContext, tool

    @tool
    def note_mode(ctx: ToolContext) -> str:
        """Write down how this turn's database calls behave."""
        Path(f"mode-{ctx.session_id}").write_text(str(failing_fast()))
        return "noted"
'''


def test_a_turn_started_by_its_request_waits_out_faults_as_a_turn(make_app: AppFactory) -> None:
    """The request's start runs in the request's context (it fails fast, and the sweep
    starts the turn then); the body it starts must not: a turn that failed fast would lose
    its place at the first locked file, and would go first at the gates, before requests."""
    root = scripted_app(make_app, [call("note_mode"), say("noted")] * 2)
    (root / "agent/tools").mkdir(exist_ok=True)
    (root / "agent/tools/note_mode.py").write_text(textwrap.dedent(NOTE_MODE))
    server = InProcessServer(root).start()
    try:
        first = server.create("first")  # started by POST /session
        server.wait_for(first, count("session.waiting"))
        server.send(first, "again")  # started by POST /session/{id}
        server.wait_for(first, count("session.waiting", 2))
    finally:
        server.stop()
    assert (root / f"mode-{first}").read_text() == "False"
