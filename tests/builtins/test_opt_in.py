"""Built-in tools end to end: opted into from agent.py, compiled, resolved, run by the loop."""

from __future__ import annotations

import json
from pathlib import Path

from eve.compiler import compile_agent, compile_to_disk
from eve.manifest import ProgrammaticBacking
from eve.messages import ToolResultMessage
from eve.models.offline import OfflineScriptModel
from eve.runtime import load_compiled_agent, resolve_agent
from tests.conftest import AppFactory
from tests.execution.helpers import turn

AGENT = """
from eve import define_agent
default = define_agent(model="offline/test", builtin_tools=["bash", "read_file", "write_file", "list_files"],
                       workspace="work")
"""


def test_builtins_compile_as_framework_bindings(make_app: AppFactory) -> None:
    result = compile_agent(make_app({"agent/agent.py": AGENT}))
    assert result.manifest is not None
    node = result.manifest.nodes["__root__"]
    tools = {t.name: t for t in node.tools}
    assert sorted(tools) == ["bash", "list_files", "read_file", "write_file"]
    assert tools["bash"].approval.kind == "always" and tools["read_file"].approval.kind == "never"
    assert tools["bash"].source_id == "eve:builtins/bash"
    binding = node.bindings["eve:builtins/bash"]
    assert isinstance(binding.backing, ProgrammaticBacking)
    assert (binding.owner.kind, binding.backing.module_id) == ("framework", "eve.builtins.bash")
    assert (binding.usage.compile, binding.usage.runtime_entry) == (True, True)


def test_a_tool_file_may_not_shadow_a_builtin(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/agent.py": AGENT,
            "agent/tools/bash.py": "from eve.tools import tool\n@tool\ndef bash(c: str) -> str:\n    'Mine.'\n    return c\n",
        }
    )
    assert [d.code for d in compile_agent(root).diagnostics.items] == ["compile/slot-collision"]


async def test_the_loop_runs_builtins_in_the_workspace(make_app: AppFactory) -> None:
    root = make_app({"agent/agent.py": AGENT})
    (root / "work").mkdir()
    (root / "script.json").write_text(
        json.dumps(
            [
                {
                    "tool_calls": [
                        {
                            "name": "write_file",
                            "input": {"path": "notes/a.txt", "content": "hello"},
                        },
                        {"name": "read_file", "input": {"path": "../agent/agent.py"}},
                        {"name": "bash", "input": {"command": "cat notes/a.txt"}},
                        {"name": "bash", "input": {"command": "echo denied"}},
                    ]
                },
                {"text": "done"},
            ]
        )
    )
    compile_to_disk(root)
    compiled = load_compiled_agent(root)
    agent = await resolve_agent(compiled.manifest, compiled.module_map)
    answers = iter([True, False])
    result = await turn(
        client=OfflineScriptModel(root / "script.json", label="script.json"),
        system=agent.instructions,
        tools=agent.tools,
        user_message="go",
        workspace=root / "work",
        approve=lambda request: next(answers),
    )
    results = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert (root / "work/notes/a.txt").read_text() == "hello"
    assert not results[0].is_error
    assert results[1].is_error and "outside the workspace" in results[1].content
    assert not results[2].is_error and json.loads(results[2].content)["stdout"] == "hello"
    assert results[3].is_error and "denied" in results[3].content
    assert str(Path(root).resolve()) not in "".join(r.content for r in results)
