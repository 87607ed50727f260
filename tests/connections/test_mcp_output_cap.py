"""An MCP tool's result is capped like a local tool's: the agent's limit for the model, the
store's cap for the event log (a real stdio server)."""

from __future__ import annotations

from pathlib import Path

from eve.compiler import compile_to_disk
from eve.events import ActionResult
from eve.execution.tool_output import STORE_CHARS
from eve.messages import ToolResultMessage
from eve.runtime import load_compiled_agent
from tests.connections.compiled_turn import compiled_turn
from tests.connections.servers import forked_stdio_source
from tests.execution.helpers import calls, text

AGENT = """
from eve import define_agent

default = define_agent(limits={"max_tool_output_chars": 1_000})
"""
CONNECTION = """
from eve.connections import define_mcp_connection

default = define_mcp_connection(
    description="The test server's big text.",
    {server},
    tools=["big"],
    expose="tools",
)
"""


async def test_a_big_mcp_result_is_capped_for_the_model_and_the_store(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / "connections").mkdir(parents=True)
    (agent / "instructions.md").write_text("You read logs.\n")
    (agent / "agent.py").write_text(AGENT)
    (agent / "connections" / "logs.py").write_text(CONNECTION.format(server=forked_stdio_source()))
    compile_to_disk(tmp_path, use_cache=False)
    loaded = load_compiled_agent(tmp_path)
    assert loaded.manifest.nodes["__root__"].config.limits.max_tool_output_chars == 1_000
    model, events = await compiled_turn(
        tmp_path, calls(("logs__big", {"chars": 2_000_000})), text("read")
    )
    [sent] = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert sent.content.startswith("0123456789" * 100 + "\n[output truncated: 2,000,000")
    assert len(sent.content) < 1_300
    [result] = [e for e in events if isinstance(e, ActionResult)]
    assert result.data.connection == "logs" and result.data.status == "completed"
    assert len(result.data.output) < STORE_CHARS + 100
    assert result.data.output.endswith(
        "[stored truncated: 2,000,000 characters, the first 1,000,000 kept]"
    )
