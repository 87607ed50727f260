"""The agents the ag_ui channel tests serve: one scripted agent per module, on a loopback
server (one eve app runs per process at a time, so each test module has its own)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.channels.ag_ui.loopback import ChannelServer
from tests.conftest import write_files
from tests.sessions.apps import SCRIPTED_AGENT, TOOLS
from tests.sessions.harness import script

_ids = itertools.count()

#: waits for the file ``release`` (written by the test, or the Node client) or a cancel
HOLD = """
    import asyncio
    from pathlib import Path
    from eve.tools import ToolContext, tool

    @tool
    async def hold(ctx: ToolContext) -> str:
        '''Wait until the file "release" exists, unless the turn is cancelled.'''
        Path(f"hold-{ctx.session_id}.started").write_text("yes")
        while not Path("release").exists():
            try:
                await asyncio.wait_for(ctx.signal.wait(), 0.05)
                return "cancelled"
            except TimeoutError:
                pass
        return "released"
"""
SOURCES = {**TOOLS, "hold": HOLD}


def serve(root: Path, responses: list[dict[str, Any]], tools: tuple[str, ...]) -> ChannelServer:
    write_files(
        root,
        {
            "agent/agent.py": SCRIPTED_AGENT.replace("{limits}", "{'max_turns': 5}"),
            "agent/instructions.md": "Follow the script.\n",
            **{f"agent/tools/{name}.py": SOURCES[name] for name in tools},
        },
    )
    script(root, responses)
    server = ChannelServer(root)
    server.start()
    return server


def served(
    factory: pytest.TempPathFactory,
    name: str,
    responses: list[dict[str, Any]],
    tools: tuple[str, ...],
) -> Iterator[ChannelServer]:
    """A module's server (its fixture yields from this): started on a fresh app root, and
    stopped once the module's tests are done."""
    server = serve(factory.mktemp(name), responses, tools)
    yield server
    server.stop()


def thread() -> str:
    return f"thread-{next(_ids)}"


def user(text: str) -> dict[str, str]:
    return {"id": f"msg-{next(_ids)}", "content": text}
