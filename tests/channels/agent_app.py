"""The agent every channel kind's tests talk to: one script, so each session goes the same way.

Turn 0 calls ``lookup`` (a plain tool, inside eve, whose result names ``ctx.principal``) and
answers ``TEA``; turn 1 calls ``ship``,
which a person must approve, and answers ``SHIPPED``; turn 2 calls ``hold``, which runs until
the test writes ``release-<session>`` (or the turn is cancelled), and answers ``HELD``. A
fourth turn fails: the script has no more responses.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from bench.channel_probes import Probe, ProbeFn
from tests.conftest import write_files
from tests.sessions.apps import TOOLS
from tests.sessions.inprocess import ROOT, InProcessServer

TEA = "Tea is a drink."
SHIPPED = "Shipped the book."
HELD = "Held and released."

SCRIPT = [
    {"tool_calls": [{"name": "lookup", "input": {"topic": "tea"}}]},
    {"text": TEA},
    {"tool_calls": [{"name": "ship", "input": {"item": "book"}}]},
    {"text": SHIPPED},
    {"tool_calls": [{"name": "hold", "input": {}}]},
    {"text": HELD},
]

FILES = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(model="offline/script:script.json", limits={"max_turns": 10})
    """,
    "agent/instructions.md": "Follow the script.\n",
    "agent/tools/lookup.py": """
        from eve.tools import ToolContext, tool

        @tool
        def lookup(ctx: ToolContext, topic: str) -> str:
            '''Look a topic up (for whom: the turn's sender, as a channel says it).'''
            return f"{topic}: a drink, for {ctx.principal.id}"
    """,
    "agent/tools/ship.py": TOOLS["ship"],
    "agent/tools/hold.py": """
        import asyncio
        from pathlib import Path
        from eve.tools import ToolContext, tool

        @tool
        async def hold(ctx: ToolContext) -> str:
            '''Run until the test writes release-<session>, or the turn is cancelled.'''
            Path(f"hold-{ctx.session_id}.started").write_text("yes")
            while not Path(f"release-{ctx.session_id}").exists():
                if ctx.signal.cancelled:
                    return "stopped"
                await asyncio.sleep(0.02)
            return "released"
    """,
}


def write_app(root: Path) -> Path:
    write_files(root, FILES)
    (root / "script.json").write_text(json.dumps(SCRIPT), encoding="utf-8")
    return root


def run_probe(server: InProcessServer, probe: ProbeFn, path: str) -> Probe:
    """A kind's bench probe, run against ``server`` as the benchmark runs it."""

    async def run() -> Probe:
        async with httpx.AsyncClient(
            transport=server.async_transport(), base_url=ROOT, headers=server.headers()
        ) as http:
            return await probe(http, path)

    return asyncio.run(run())


def restart_and_release(server: InProcessServer, session_id: str) -> None:
    """Stop the server while the session's ``hold`` runs, start it again on the same root
    (the turn recovers), then let the hold end."""
    server.stop()
    server.start()
    (server.app_root / f"release-{session_id}").write_text("go")
