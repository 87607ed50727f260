"""In a real turn: a server that dies under a tool call with a side effect is not called
again; the model reads a named error and its next call reaches a new server."""

from __future__ import annotations

import sys
from pathlib import Path

from eve.compiler import compile_to_disk
from eve.events import ActionResult
from eve.messages import ToolResultMessage
from tests.connections.compiled_turn import compiled_turn
from tests.execution.helpers import calls, text

RAW_SERVER = Path(__file__).with_name("raw_server.py")
CONNECTION = """
from eve.connections import define_mcp_connection

default = define_mcp_connection(
    description="Side effects, counted.",
    command={command!r},
    tools=["count", "count_then_die"],
    expose="tools",
)
"""


async def test_a_tool_whose_server_dies_runs_once_in_the_turn(tmp_path: Path) -> None:
    counted = tmp_path / "side-effects"
    agent = tmp_path / "agent"
    (agent / "connections").mkdir(parents=True)
    (agent / "instructions.md").write_text("You count.\n")
    command = [sys.executable, str(RAW_SERVER), str(counted)]
    (agent / "connections" / "raw.py").write_text(CONNECTION.format(command=command))
    compile_to_disk(tmp_path, use_cache=False)
    model, events = await compiled_turn(
        tmp_path, calls(("raw__count_then_die", {})), calls(("raw__count", {})), text("done")
    )
    [interrupted] = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert interrupted.is_error
    assert "MCPCallInterrupted" in interrupted.content and "not called again" in interrupted.content
    died, counted_once = [e.data for e in events if isinstance(e, ActionResult)]
    assert (died.name, died.status) == ("raw__count_then_die", "failed")
    assert (counted_once.name, counted_once.output) == ("raw__count", "counted")
    assert counted.read_text().splitlines() == ["ran", "ran"], "each call ran exactly once"
