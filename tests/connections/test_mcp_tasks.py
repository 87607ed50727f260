"""Task-augmented MCP tools (protocol 2025-11-25) in real turns: polled to completion,
cancelled on the server with the turn, and read again (not called again) by a turn run
again after a restart."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from eve._cancellation import CancelSignal
from eve.compiler import compile_to_disk
from eve.events import ActionPartial, ActionResult, SessionEvent
from eve.runtime.server_asks import SentCall
from tests.connections.compiled_turn import compiled_turn
from tests.connections.task_server import serve_http
from tests.execution.helpers import calls, text

SERVER = Path(__file__).with_name("task_server.py")
CONNECTION = """
from eve.connections import define_mcp_connection

default = define_mcp_connection(
    description="Runs tools as tasks.",
    {server},
    expose="tools",
)
"""


def app(tmp_path: Path, url: str | None = None) -> Path:
    agent = tmp_path / "agent"
    (agent / "connections").mkdir(parents=True)
    (agent / "instructions.md").write_text("You add.\n")
    command = [sys.executable, str(SERVER), str(tmp_path / "server.log")]
    server = f"url={url!r}" if url else f"command={command!r}"
    (agent / "connections" / "tasks.py").write_text(CONNECTION.format(server=server))
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


class Recorded:
    """A durable turn's record of its MCP calls, as an earlier run left it."""

    def __init__(self, **sent: SentCall) -> None:
        self.calls = dict(sent)

    async def sent(self, call_id: str) -> SentCall | None:
        return self.calls.get(call_id)

    async def record(self, call_id: str, *, task_id: str | None = None) -> None:
        self.calls[call_id] = SentCall(task_id=task_id)


async def test_a_turn_run_again_reads_its_task_instead_of_calling_again(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with serve_http(str(log)) as url:
        # the run before the restart: it created the task, and its record says so
        async with httpx.AsyncClient() as http:
            created = await http.post(
                url,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "sum", "arguments": {"a": 41}, "task": {}},
                },
            )
        task_id = created.json()["result"]["task"]["taskId"]
        root = app(tmp_path, url=url)
        _, events = await compiled_turn(
            root,
            calls(("tasks__sum", {"a": 41})),
            text("42 it is"),
            sent_calls=Recorded(c0=SentCall(task_id=task_id)),
        )
    [result] = [e.data for e in events if isinstance(e, ActionResult)]
    assert (result.status, result.output) == ("completed", "sum=42")
    lines = log.read_text().splitlines()
    assert lines.count("call sum task=True") == 1, "the task was read, not created again"
    assert lines[-1] == f"tasks/result {task_id}"


async def test_a_sent_call_is_not_sent_again(tmp_path: Path) -> None:
    root = app(tmp_path)
    recorded = Recorded(c0=SentCall())
    _, events = await compiled_turn(
        root, calls(("tasks__sum", {"a": 1})), text("sorry"), sent_calls=recorded
    )
    [result] = [e.data for e in events if isinstance(e, ActionResult)]
    assert result.output.startswith("MCPCallInterrupted: connection 'tasks': the turn stopped")
    assert not (root / "server.log").exists(), "the server never got the call"
