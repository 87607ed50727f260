"""The built-in registry: names, modules, schemas, approvals — and use through compile and loop."""

from __future__ import annotations

import importlib
from typing import Any

from eve.authoring.agent import BUILTIN_TOOL_NAMES
from eve.authoring.tools import FunctionTool, ToolDefinition
from eve.builtins import BUILTIN_TOOLS
from eve.compiler import compile_to_disk
from eve.execution.tool_calls import ApprovalRequest
from eve.messages import ToolResultMessage
from eve.models.function import FunctionModel
from eve.runtime import load_compiled_agent, resolve_agent
from tests.conftest import AppFactory
from tests.execution.helpers import Script, calls, text, turn


def definition(name: str) -> ToolDefinition:
    value = importlib.import_module(BUILTIN_TOOLS[name]).default
    assert isinstance(value, ToolDefinition)
    return value


def fields(name: str) -> dict[str, Any]:
    schema = definition(name).json_schema()
    assert schema is not None
    return {
        field: (spec.get("type"), spec.get("default", "<required>"))
        for field, spec in schema["properties"].items()
    }


def test_names_map_to_their_modules() -> None:
    assert BUILTIN_TOOLS == {
        "bash": "eve.builtins.bash",
        "list_files": "eve.builtins.list_files",
        "read_file": "eve.builtins.read_file",
        "run_python": "eve.builtins.run_python",
        "write_file": "eve.builtins.write_file",
    }
    assert (
        tuple(BUILTIN_TOOLS)
        == BUILTIN_TOOL_NAMES
        == (
            "bash",
            "list_files",
            "read_file",
            "run_python",
            "write_file",
        )
    )


def test_only_the_command_tools_need_approval() -> None:
    kinds = {name: definition(name).approval.kind for name in BUILTIN_TOOLS}
    assert kinds == {
        "bash": "always",
        "list_files": "never",
        "read_file": "never",
        "run_python": "always",
        "write_file": "never",
    }
    assert all(isinstance(definition(name), FunctionTool) for name in BUILTIN_TOOLS)


def test_input_schemas() -> None:
    assert fields("read_file") == {
        "path": ("string", "<required>"),
        "offset_line": ("integer", 0),
        "max_bytes": ("integer", 262144),
    }
    assert fields("write_file") == {
        "path": ("string", "<required>"),
        "content": ("string", "<required>"),
    }
    assert fields("list_files") == {
        "path": ("string", "."),
        "pattern": ("string", "*"),
        "recursive": ("boolean", False),
    }
    assert fields("bash") == {
        "command": ("string", "<required>"),
        "timeout_seconds": ("number", 30.0),
    }
    for name in BUILTIN_TOOLS:
        assert definition(name).json_schema()["additionalProperties"] is False  # type: ignore[index]


AGENT = """
from eve import define_agent
default = define_agent(
    model="offline/test",
    builtin_tools=["bash", "list_files", "read_file", "write_file"],
    workspace="ws",
)
"""


async def test_compiled_agent_runs_the_builtins_in_its_workspace(
    make_app: AppFactory,
) -> None:
    root = make_app({"agent/agent.py": AGENT})
    (root / "ws").mkdir()
    compile_to_disk(root)
    loaded = load_compiled_agent(root)
    agent = await resolve_agent(loaded.manifest, loaded.module_map)
    assert sorted(t.name for t in agent.tools) == ["bash", "list_files", "read_file", "write_file"]
    asked: list[tuple[str, str]] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append((request.tool_name, request.rule))
        return True

    script = Script(
        calls(
            ("write_file", {"path": "notes/today.md", "content": "buy milk\n"}),
            ("read_file", {"path": "notes/today.md"}),
            ("list_files", {"recursive": True}),
            ("read_file", {"path": "../agent/agent.py"}),
            ("bash", {"command": "wc -c < notes/today.md"}),
        ),
        text("done"),
    )
    result = await turn(
        client=FunctionModel(script),
        system="sys",
        tools=agent.tools,
        user_message="hi",
        workspace=root / "ws",
        approve=approve,
    )
    assert result.stop_reason == "complete"
    results = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert [(r.content, r.is_error) for r in results] == [
        ('{"path":"notes/today.md","bytes_written":9}', False),
        ("buy milk\n", False),
        ('{"path":".","entries":["notes/","notes/today.md"],"truncated":false}', False),
        ("WorkspaceViolation: '../agent/agent.py' climbs with '..' outside the workspace", True),
        ('{"exit_code":0,"status":"exited","stdout":"9\\n","stderr":""}', False),
    ]
    assert asked == [("bash", "always")]  # the file tools ran without asking
    assert (root / "ws" / "notes" / "today.md").read_text() == "buy milk\n"
