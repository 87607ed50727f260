"""resolve_agent adds the automatic built-ins per node; eve__skill reads files from app_root."""

from __future__ import annotations

from pathlib import Path

import pytest

from eve.authoring.context import ToolContext
from eve.compiler import compile_to_disk
from eve.errors import StaleArtifacts
from eve.runtime import ResolvedAgent, load_compiled_agent, resolve_agent
from tests.conftest import AppFactory

APP = {
    "agent/skills/tone.md": "---\ndescription: How to sound.\n---\nBe warm.\n",
    "agent/tools/greet.py": """
        from eve.tools import tool

        @tool(deferred=True)
        def greet(name: str) -> str:
            '''Greet someone.'''
            return "hi " + name
    """,
    "agent/subagents/helper/agent.py": """
        from eve import define_agent
        default = define_agent(description="Helps.")
    """,
    "agent/subagents/helper/skills/care.md": "---\ndescription: Be careful.\n---\nCheck twice.\n",
}


async def resolved(root: Path, node: str | None = None) -> ResolvedAgent:
    compile_to_disk(root)
    loaded = load_compiled_agent(root)
    return await resolve_agent(loaded.manifest, loaded.module_map, node, app_root=root)


async def load(agent: ResolvedAgent, name: str) -> str:
    skill_tool = agent.tool("eve__skill")
    assert skill_tool is not None and skill_tool.execute is not None
    ctx = ToolContext(session_id="s", call_id="c", tool_name="eve__skill")
    body: str = await skill_tool.execute({"name": name}, ctx)
    return body


async def test_each_node_gets_the_built_ins_of_its_own_contents(make_app: AppFactory) -> None:
    root = make_app(APP)
    agent, helper = await resolved(root), await resolved(root, "helper")
    names = ["greet", "helper", "eve__search", "eve__skill", "eve__tool"]
    assert [t.name for t in agent.tools] == names
    # the helper inherits the deferred greet, so its catalog has it too
    assert [t.name for t in helper.tools] == ["greet", "eve__search", "eve__skill", "eve__tool"]
    assert await load(helper, "care") == "Check twice.\n"
    listing = helper.tool("eve__skill")
    assert listing is not None and listing.description.endswith("The skills:\n- care: Be careful.")


async def test_skill_files_are_read_from_app_root_whatever_the_cwd(
    make_app: AppFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_app(APP)
    agent = await resolved(root)
    monkeypatch.chdir(tmp_path)
    assert await load(agent, "tone") == "Be warm.\n"


async def test_a_skill_removed_since_the_compile_says_to_recompile(make_app: AppFactory) -> None:
    root = make_app(APP)
    agent = await resolved(root)
    (root / "agent/skills/tone.md").unlink()
    with pytest.raises(StaleArtifacts, match=r"agent/skills/tone.md no longer exists.*eve compile"):
        await load(agent, "tone")
