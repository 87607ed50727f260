"""resolve_agent and resolve_tool_definition against real compiled artifacts."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from eve.authoring.context import ToolContext
from eve.compiler import compile_to_disk
from eve.errors import (
    ArtifactsMissing,
    InvalidModuleExport,
    ManifestVersionError,
    MissingCompiledModuleNamespace,
    ResolveAgentError,
    StaleArtifacts,
    ToolInputInvalid,
)
from eve.manifest import MANIFEST_PATH, MODULE_MAP_PATH
from eve.runtime import load_compiled_agent, load_resolved_module_export, resolve_agent
from eve.runtime.resolved import ResolvedFunctionTool, ResolvedProviderTool, ResolvedWorkflowTool
from tests.conftest import AppFactory

SIDE_EFFECT_PROVIDER = """
from pathlib import Path
Path(__file__).with_name("imported.marker").write_text("yes")
from eve.tools import provider_tool
default = provider_tool(provider="anthropic", type="web_search_20250305", description="Search.")
"""

APP = {
    "agent/tools/b_lookup.py": """
        from eve.tools import define_tool
        default = define_tool(
            description="Lookup.",
            input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            execute=lambda data, ctx: data["n"] * 2,
        )
    """,
    "agent/tools/a_typed.py": """
        from pydantic import BaseModel, field_validator
        from eve.tools import define_tool

        class Input(BaseModel):
            word: str

            @field_validator("word")
            @classmethod
            def no_spaces(cls, value: str) -> str:
                if " " in value:
                    raise ValueError("one word only")
                return value

        default = define_tool(description="Typed.", input_schema=Input,
                              execute=lambda data, ctx: data.word.upper())
    """,
    "agent/tools/c_search.py": SIDE_EFFECT_PROVIDER,
    "agent/tools/d_wait.py": """
        from eve.tools import define_workflow_tool
        async def body(data, ctx):
            return "waited"
        default = define_workflow_tool(description="Wait.", run=body)
    """,
    "agent/tools/e_made.py": """
        from pathlib import Path
        from eve.tools import define_tool
        calls = Path(__file__).with_name("factory.calls")
        async def default():
            calls.write_text(str(int(calls.read_text()) + 1 if calls.exists() else 1))
            return define_tool(description="Made.", execute=lambda d, c: "made")
    """,
}


def compiled(make_app: AppFactory, files: dict[str, str] | None = None) -> Path:
    root = make_app(APP if files is None else files)
    compile_to_disk(root)
    return root


def ctx() -> ToolContext:
    return ToolContext(session_id="s", call_id="c", tool_name="t")


async def test_tools_resolve_in_manifest_order_with_three_branches(make_app: AppFactory) -> None:
    root = compiled(make_app)
    marker = root / "agent/tools/imported.marker"
    marker.unlink()  # written when the compiler read the module
    loaded = load_compiled_agent(root)
    agent = await resolve_agent(loaded.manifest, loaded.module_map)

    assert [t.name for t in agent.tools] == ["a_typed", "b_lookup", "c_search", "d_wait", "e_made"]
    search = agent.tool("c_search")
    assert isinstance(search, ResolvedProviderTool) and search.entry.handling == "provider-tool"
    assert search.entry.provider is not None and search.entry.provider.type == "web_search_20250305"
    assert not marker.exists()  # a provider tool: the module was never imported

    wait = agent.tool("d_wait")
    assert isinstance(wait, ResolvedWorkflowTool) and wait.entry.handling == "workflow-tool"
    assert await wait.run({}, ctx()) == "waited"

    typed = agent.tool("a_typed")
    assert isinstance(typed, ResolvedFunctionTool)
    value = typed.validator.validate({"word": "hi"})
    assert typed.execute(value, ctx()) == "HI"
    # the live pydantic model runs the author's validator, which JSON Schema cannot express
    with pytest.raises(ToolInputInvalid, match="one word only"):
        typed.validator.validate({"word": "two words"})

    lookup = agent.tool("b_lookup")
    assert isinstance(lookup, ResolvedFunctionTool)
    assert lookup.execute(lookup.validator.validate({"n": 21}), ctx()) == 42
    with pytest.raises(ToolInputInvalid, match="'n' is a required property"):
        lookup.validator.validate({})


async def test_factories_are_called_once_and_memoized(make_app: AppFactory) -> None:
    root = compiled(make_app)
    calls = root / "agent/tools/factory.calls"
    assert calls.read_text() == "1"  # the compiler called it to read the shape
    loaded = load_compiled_agent(root)
    first = await resolve_agent(loaded.manifest, loaded.module_map)
    second = await resolve_agent(loaded.manifest, loaded.module_map)
    assert calls.read_text() == "2"
    made = first.tool("e_made")
    assert made is not None and made.execute is not None and made.execute({}, ctx()) == "made"
    assert made.execute is second.tool("e_made").execute  # type: ignore[union-attr]


async def test_removed_module_map_entry_raises_missing_namespace(make_app: AppFactory) -> None:
    root = compiled(make_app)
    loaded = load_compiled_agent(root)
    del loaded.module_map.nodes["__root__"]["modules"]["tools/b_lookup.py"]
    with pytest.raises(MissingCompiledModuleNamespace) as raised:
        await resolve_agent(loaded.manifest, loaded.module_map)
    error = raised.value
    assert isinstance(error, ResolveAgentError)
    assert (error.source_id, error.logical_path) == ("tools/b_lookup.py", "agent/tools/b_lookup.py")
    assert str(error) == (
        'Missing compiled module namespace for tool source "tools/b_lookup.py" in node '
        '"__root__" (agent/tools/b_lookup.py). The compiled artifacts are stale: run `eve compile`.'
    )


async def test_lookup_defaults_to_the_root_node(make_app: AppFactory) -> None:
    root = compiled(make_app)
    loaded = load_compiled_agent(root)
    definition = await load_resolved_module_export(
        loaded.module_map,
        kind="tool",
        source_id="tools/a_typed.py",
        logical_path="agent/tools/a_typed.py",
    )
    assert definition.description == "Typed."
    with pytest.raises(MissingCompiledModuleNamespace, match='in node "other"'):
        await load_resolved_module_export(
            loaded.module_map,
            kind="tool",
            source_id="tools/a_typed.py",
            logical_path="agent/tools/a_typed.py",
            node_id="other",
        )


async def test_same_tool_name_resolves_per_node(make_app: AppFactory) -> None:
    root = compiled(
        make_app,
        {
            "agent/tools/echo.py": "from eve.tools import tool\n@tool\ndef echo(x: str) -> str:\n    'Root.'\n    return 'root:' + x\n",
            "agent/subagents/helper/agent.py": "from eve import define_agent\ndefault = define_agent(description='Helps.')\n",
            "agent/subagents/helper/tools/echo.py": "from eve.tools import tool\n@tool\ndef echo(x: str) -> str:\n    'Helper.'\n    return 'helper:' + x\n",
        },
    )
    loaded = load_compiled_agent(root)
    outputs = []
    for node in (None, "helper"):
        agent = await resolve_agent(loaded.manifest, loaded.module_map, node)
        echo = agent.tool("echo")
        assert isinstance(echo, ResolvedFunctionTool)
        outputs.append(echo.execute(echo.validator.validate({"x": "hi"}), ctx()))
    assert outputs == ["root:hi", "helper:hi"]
    with pytest.raises(ResolveAgentError, match='no agent node "nope"'):
        await resolve_agent(loaded.manifest, loaded.module_map, "nope")


async def test_a_module_map_from_another_compile_is_refused_before_imports(
    make_app: AppFactory,
) -> None:
    root = compiled(make_app)
    (root / "agent/tools/imported.marker").unlink()
    other = compiled(make_app, {**APP, "agent/tools/f_extra.py": APP["agent/tools/e_made.py"]})
    (root / MODULE_MAP_PATH).write_bytes((other / MODULE_MAP_PATH).read_bytes())
    with pytest.raises(StaleArtifacts, match="different compiles"):
        load_compiled_agent(root)
    assert not (root / "agent/tools/imported.marker").exists()


def test_missing_and_foreign_artifacts(make_app: AppFactory) -> None:
    root = make_app()
    with pytest.raises(ArtifactsMissing, match="run `eve compile`"):
        load_compiled_agent(root)
    compile_to_disk(root)
    data = json.loads((root / MANIFEST_PATH).read_text())
    data["schema_version"] = 99
    (root / MANIFEST_PATH).write_bytes(msgspec.json.encode(data))
    with pytest.raises(ManifestVersionError, match="schema version 99"):
        load_compiled_agent(root)


async def test_changed_module_after_compile_is_a_clear_error(make_app: AppFactory) -> None:
    root = compiled(make_app)
    (root / "agent/tools/b_lookup.py").write_text("X = 1\n")
    loaded = load_compiled_agent(root)
    with pytest.raises(InvalidModuleExport, match="no longer has `default`"):
        await resolve_agent(loaded.manifest, loaded.module_map)


async def test_resolving_is_concurrent_across_tools(make_app: AppFactory) -> None:
    slow = """
        import asyncio
        from agent.lib.trace import EVENTS
        from eve.tools import define_tool
        async def default():
            EVENTS.append("start {n}")
            await asyncio.sleep(0.01)
            EVENTS.append("end {n}")
            return define_tool(description="Slow {n}.", execute=lambda d, c: {n})
    """
    files = {f"agent/tools/slow{n}.py": slow.replace("{n}", str(n)) for n in range(3)}
    root = compiled(make_app, {**files, "agent/lib/trace.py": "EVENTS: list[str] = []\n"})
    loaded = load_compiled_agent(root)
    agent = await resolve_agent(loaded.manifest, loaded.module_map)
    from agent.lib.trace import EVENTS  # type: ignore[import-not-found]

    assert EVENTS == ["start 0", "start 1", "start 2", "end 0", "end 1", "end 2"]
    assert [t.description for t in agent.tools] == ["Slow 0.", "Slow 1.", "Slow 2."]


def test_loading_the_module_map_imports_no_authored_module(make_app: AppFactory) -> None:
    import sys

    from eve.runtime import load_module_map

    root = compiled(make_app)
    for name in [n for n in sys.modules if n == "agent" or n.startswith("agent.")]:
        del sys.modules[name]
    module_map = load_module_map(root / MODULE_MAP_PATH)
    assert not [n for n in sys.modules if n.startswith("agent.")]
    loader = module_map.loader("__root__", "tools/a_typed.py")
    assert loader is not None and "agent.tools.a_typed" not in sys.modules
