"""Task-augmented MCP tools (protocol 2025-11-25) in real turns: polled to completion, and
cancelled on the server with the turn."""

from __future__ import annotations

import sys
from pathlib import Path

from eve.cancellation import CancelSignal
from eve.compiler import compile_to_disk
from eve.events import ActionPartial, ActionResult, SessionEvent
from tests.connections.compiled_turn import compiled_turn
from tests.execution.helpers import calls, text

SERVER = Path(__file__).with_name("task_server.py")
CONNECTION = """
from eve.connections import define_mcp_connection

default = define_mcp_connection(
    description="Runs tools as tasks.",
    command={command!r},
    expose="tools",
)
"""


def app(tmp_path: Path) -> Path:
    agent = tmp_path / "agent"
    (agent / "connections").mkdir(parents=True)
    (agent / "instructions.md").write_text("You add.\n")
    command = [sys.executable, str(SERVER), str(tmp_path / "server.log")]
    (agent / "connections" / "tasks.py").write_text(CONNECTION.format(command=command))
    compile_to_disk(tmp_path, use_cache=False)
    return tmp_path


async def test_a_task_tool_is_polled_to_completion(tmp_path: Path) -> None:
    root = app(tmp_path)
    model, events = await compiled_turn(root, calls(("tasks__sum", {"a": 41})), text("42 it is"))
    tools = {tool.name for tool in model.requests[0].tools}
    assert {"tasks__sum", "tasks__forever"} <= tools, "a required task tool is offered"
    [result] = [e.data for e in events if isinstance(e, ActionResult)]
    assert (result.status, result.output) == ("completed", "sum=42")
    partials = [e.data.partial for e in events if isinstance(e, ActionPartial)]
    assert partials and partials[0]["task"] == "working"
    assert (root / "server.log").read_text().splitlines() == [
        "call sum task=True",
        "tasks/get task-1",
        "tasks/get task-1",
        "tasks/result task-1",
    ]


async def test_a_cancelled_turn_cancels_its_task_on_the_server(tmp_path: Path) -> None:
    root = app(tmp_path)
    signal = CancelSignal()
    events: list[SessionEvent] = []

    def watch(event: SessionEvent) -> None:
        events.append(event)
        if isinstance(event, ActionPartial):
            signal.cancel("cancelled")  # the task is working on the server: cancel the turn

    await compiled_turn(
        root,
        calls(("tasks__forever", {"a": 1})),
        text("never read"),
        signal=signal,
        on_event=watch,
    )
    [result] = [e.data for e in events if isinstance(e, ActionResult)]
    assert result.status == "failed"
    assert result.output.startswith("MCPTaskCancelled: connection 'tasks': tool 'forever'")
    log = (root / "server.log").read_text().splitlines()
    assert log[0] == "call forever task=True" and log[-1] == "tasks/cancel task-1"
