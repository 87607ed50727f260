"""compile_agent: definitions → manifest entries, diagnostics, closure, determinism."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from eve.compiler import compile_agent, compile_to_disk
from eve.compiler.bindings import make_binding
from eve.compiler.cache import CompileCache
from eve.compiler.diagnostics import DiagnosticSink
from eve.errors import CompileFailed
from eve.manifest import (
    SCHEMA_VERSION,
    CompiledManifest,
    FunctionToolEntry,
    ProviderToolEntry,
    ToolEntry,
    Usage,
    WorkflowToolEntry,
    decode,
)
from tests.conftest import AppFactory

PYDANTIC_TOOL = """
from pydantic import BaseModel, Field
from eve.tools import define_tool
from eve.tools.approval import always

class Input(BaseModel):
    city: str = Field(description="City name")

class Output(BaseModel):
    temperature: float

default = define_tool(
    description="Weather for a city.",
    input_schema=Input,
    output_schema=Output,
    execute=lambda data, ctx: {"temperature": 20.0},
    approval=always(),
    to_model_output=lambda result: f"{result['temperature']} C",
    deferred=True,
    available_in_subagents=False,
    ends_turn=True,
)
"""

JSON_TOOL = """
from eve.tools import define_tool

lookup = define_tool(
    description="Look a word up.",
    input_schema={"type": "object", "properties": {"word": {"type": "string"}},
                  "required": ["word"]},
    execute=lambda data, ctx: data["word"].upper(),
    approval=lambda data: "approved",
)
"""

DECORATED_TOOL = '''
from eve.tools import ToolContext, tool

@tool
async def add(a: int, b: int = 2, *, ctx: ToolContext) -> int:
    """Add two numbers.

    Returns the sum.
    """
    return a + b
'''

PROVIDER_TOOL = """
from eve.tools import provider_tool
default = provider_tool(provider="anthropic", type="web_search_20250305",
                        description="Search the web.", config={"max_uses": 2})
"""

WORKFLOW_TOOL = """
from eve.tools import define_workflow_tool
async def body(data, ctx):
    return "done"
default = define_workflow_tool(description="Wait for a person.", run=body)
"""

FACTORY_TOOL = """
from eve.tools import define_tool
async def default():
    return define_tool(description="Made by a factory.", execute=lambda d, c: "ok")
"""


def tools_of(root: Path, node: str = "__root__") -> dict[str, ToolEntry]:
    result = compile_agent(root)
    assert result.manifest is not None, [d.message for d in result.diagnostics.items]
    return {t.name: t for t in result.manifest.nodes[node].tools}


def codes(root: Path) -> list[tuple[str, str | None, int | None]]:
    result = compile_agent(root)
    return [(d.code, d.source_path, d.line) for d in result.diagnostics.items]


def test_every_tool_form_normalizes(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/tools/weather.py": PYDANTIC_TOOL,
            "agent/tools/lookup.py": JSON_TOOL,
            "agent/tools/add.py": DECORATED_TOOL,
            "agent/tools/search.py": PROVIDER_TOOL,
            "agent/tools/ask.py": WORKFLOW_TOOL,
            "agent/tools/made.py": FACTORY_TOOL,
        }
    )
    tools = tools_of(root)
    assert list(tools) == ["add", "ask", "lookup", "made", "search", "weather"]

    weather = tools["weather"]
    assert weather.input_schema is not None
    assert weather.input_schema["properties"]["city"]["description"] == "City name"
    assert weather.schema_source == "pydantic"
    assert (
        weather.output_schema is not None and "temperature" in weather.output_schema["properties"]
    )
    assert (weather.approval.kind, weather.deferred, weather.available_in_subagents) == (
        "always",
        True,
        False,
    )
    assert isinstance(weather, FunctionToolEntry) and weather.handling == "dispatch"
    assert weather.ends_turn and weather.has_model_output_projection
    assert (weather.export_name, weather.factory, weather.source_id) == (
        "default",
        False,
        "tools/weather.py",
    )

    lookup = tools["lookup"]
    assert (lookup.export_name, lookup.schema_source, lookup.approval.kind) == (
        "lookup",
        "json-schema",
        "policy",
    )
    assert lookup.input_schema == {
        "type": "object",
        "properties": {"word": {"type": "string"}},
        "required": ["word"],
    }

    add = tools["add"]
    assert add.description == "Add two numbers.\n\nReturns the sum."
    assert add.input_schema is not None
    assert set(add.input_schema["properties"]) == {"a", "b"}  # ctx is not a schema field
    assert add.input_schema["required"] == ["a"]

    search = tools["search"]
    assert isinstance(search, ProviderToolEntry) and search.handling == "provider-tool"
    assert not hasattr(search, "input_schema")  # the provider owns its schema
    assert search.provider.config == {"max_uses": 2}

    assert isinstance(tools["ask"], WorkflowToolEntry)
    assert tools["ask"].handling == "workflow-tool"
    assert (tools["made"].factory, tools["made"].export_name) == (True, "default")


def test_import_failure_points_at_the_authors_line(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/lib/broken.py": "VALUE = 1\nOTHER = 1 / 0\n",
            "agent/tools/uses.py": "from agent.lib.broken import VALUE\n",
        }
    )
    result = compile_agent(root)
    [diagnostic] = result.diagnostics.items
    assert diagnostic.code == "compile/import-failed"
    assert diagnostic.source_path == "agent/lib/broken.py"
    assert "at agent/lib/broken.py:2" in diagnostic.message
    assert "ZeroDivisionError" in diagnostic.message


def test_syntax_error_is_reported_with_its_line(make_app: AppFactory) -> None:
    root = make_app({"agent/tools/bad.py": "x = 1\ndef (:\n"})
    [(code, path, line)] = codes(root)
    assert (code, path, line) == ("compile/import-failed", "agent/tools/bad.py", 2)


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("from eve import define_agent\nagent = define_agent()\n", "compile/wrong-definition-kind"),
        ("X = 1\n", "compile/export-missing"),
        ("default = 42\n", "compile/export-invalid"),
        (
            "from eve.tools import define_tool\n"
            "a = define_tool(description='a', execute=print)\n"
            "b = define_tool(description='b', execute=print)\n",
            "compile/export-ambiguous",
        ),
        ("def default():\n    raise RuntimeError('nope')\n", "compile/factory-failed"),
        (
            "from eve.tools import define_tool\n"
            "default = define_tool(description='d', execute=print,"
            " input_schema={'type': 'object', 'properties': {'a': {'type': 'nonsense'}}})\n",
            "compile/schema-invalid",
        ),
    ],
)
def test_export_rule_failures(make_app: AppFactory, source: str, code: str) -> None:
    root = make_app({"agent/tools/thing.py": source})
    assert [c for c, _, _ in codes(root)] == [code]


def test_agent_py_with_a_tool_is_wrong_kind(make_app: AppFactory) -> None:
    root = make_app({"agent/agent.py": PROVIDER_TOOL})
    assert [c for c, _, _ in codes(root)] == ["compile/wrong-definition-kind"]


def test_define_agent_rejects_unknown_keys_at_the_call(make_app: AppFactory) -> None:
    root = make_app(
        {"agent/agent.py": "from eve import define_agent\n\ndefault = define_agent(modle='x')\n"}
    )
    [(code, path, line)] = codes(root)
    assert (code, path, line) == ("compile/import-failed", "agent/agent.py", 3)
    assert (
        "modle: Extra inputs are not permitted" in compile_agent(root).diagnostics.items[0].message
    )


def test_subagent_needs_a_description(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/subagents/helper/agent.py": "from eve import define_agent\ndefault = define_agent()\n",
        }
    )
    assert [c for c, _, _ in codes(root)] == ["compile/subagent-description-missing"]


def test_same_tool_name_in_two_nodes_is_two_scopes(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/tools/echo.py": "from eve.tools import tool\n@tool\ndef echo(x: str) -> str:\n    'Root echo.'\n    return x\n",
            "agent/subagents/helper/agent.py": "from eve import define_agent\ndefault = define_agent(description='Helps.')\n",
            "agent/subagents/helper/tools/echo.py": "from eve.tools import tool\n@tool\ndef echo(y: int) -> int:\n    'Helper echo.'\n    return y\n",
        }
    )
    result = compile_agent(root)
    assert result.manifest is not None
    root_echo = result.manifest.nodes["__root__"].tools[0]
    helper_echo = result.manifest.nodes["helper"].tools[0]
    assert root_echo.source_id == helper_echo.source_id == "tools/echo.py"
    assert root_echo.logical_path != helper_echo.logical_path
    assert helper_echo.description == "Helper echo."
    assert result.manifest.nodes["__root__"].subagents == ["helper"]


# --- module usage and closure ----------------------------------------------------------------

CLOSURE_APP = {
    "agent/agent.py": "from agent.lib.settings import MODEL\nfrom eve import define_agent\n"
    "default = define_agent(model=MODEL)\n",
    "agent/lib/settings.py": "MODEL = 'offline/test'\n",
    "agent/lib/__init__.py": "",
    "agent/lib/catalog.py": "from .units import UNIT\nPRICES = {'a': 1}\n",
    "agent/lib/units.py": "UNIT = 'EUR'\n",
    "agent/lib/unused.py": "X = 1\n",
    "agent/tools/price.py": "from eve.tools import tool\n\n@tool\ndef price(item: str) -> int:\n"
    "    'Price.'\n    from ..lib import catalog  # imported only when called\n"
    "    return catalog.PRICES[item]\n",
    "agent/tools/search.py": PROVIDER_TOOL,
}


def usage(root: Path) -> dict[str, tuple[bool, bool]]:
    result = compile_agent(root)
    assert result.manifest is not None, [d.message for d in result.diagnostics.items]
    bindings = result.manifest.nodes["__root__"].bindings
    return {k: (b.usage.compile, b.usage.runtime_entry) for k, b in bindings.items()}


def test_usage_flags_and_runtime_closure(make_app: AppFactory) -> None:
    flags = usage(make_app(CLOSURE_APP))
    assert flags == {
        "agent.py": (True, False),
        "lib/__init__.py": (True, True),  # agent.py imports a module of the lib package
        "lib/catalog.py": (False, True),  # reached through a relative import inside a function
        "lib/units.py": (False, True),  # reached through catalog
        "lib/settings.py": (True, False),  # read only while compiling agent.py
        "tools/price.py": (True, True),
        "tools/search.py": (True, False),  # provider tool: never a runtime entry
    }


def test_binding_dependencies_are_source_ids(make_app: AppFactory) -> None:
    result = compile_agent(make_app(CLOSURE_APP))
    assert result.manifest is not None
    bindings = result.manifest.nodes["__root__"].bindings
    assert bindings["tools/price.py"].backing.dependencies == ["lib/__init__.py", "lib/catalog.py"]
    assert bindings["lib/catalog.py"].backing.dependencies == ["lib/units.py"]
    assert bindings["lib/catalog.py"].backing.module_id == "agent.lib.catalog"


def test_import_cycle_is_an_error_naming_the_cycle(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/lib/a.py": "from agent.lib import b\n",
            "agent/lib/b.py": "import agent.lib.a\n",
            "agent/tools/t.py": "from agent.lib import a\n" + DECORATED_TOOL,
        }
    )
    result = compile_agent(root)
    cycle = [d for d in result.diagnostics.items if d.code == "compile/import-cycle"]
    assert len(cycle) == 1
    assert 'cycle includes "agent/lib/a.py"' in cycle[0].message
    assert "agent/lib/a.py → agent/lib/b.py → agent/lib/a.py" in cycle[0].message
    assert result.manifest is None


def test_a_binding_with_no_usage_is_refused() -> None:
    sink = DiagnosticSink()
    binding = make_binding(
        path="agent/lib/x.py",
        source_id="lib/x.py",
        fingerprint="",
        dependencies=[],
        usage=Usage(compile=False, runtime_entry=False),
        sink=sink,
        node_id="__root__",
    )
    assert binding is None
    [diagnostic] = sink.items
    assert diagnostic.code == "compile/binding-unused"
    assert 'binding "lib/x.py" has no compile or runtime usage' in diagnostic.message


# --- module state lint -----------------------------------------------------------------------


def test_module_state_mutation_warns_and_points_to_define_state(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/tools/counter.py": "from eve.tools import tool\ncount = 0\n\n@tool\n"
            "def counter() -> int:\n    'Count.'\n    global count\n    count += 1\n    return count\n",
            "agent/tools/history.py": "from eve.tools import tool\nseen = []\n\n@tool\n"
            "def history(x: str) -> int:\n    'Remember.'\n    seen.append(x)\n    return len(seen)\n",
            "agent/tools/clean.py": "from eve.tools import tool\nLIMITS = {'a': 1}\n\n@tool\n"
            "def clean(x: str) -> int:\n    'Read only.'\n    seen = []\n    seen.append(x)\n"
            "    return LIMITS.get(x, 0)\n",
        }
    )
    result = compile_agent(root)
    assert result.manifest is not None  # warnings do not fail the compile
    warnings = [(d.source_path, d.line) for d in result.diagnostics.items]
    assert warnings == [("agent/tools/counter.py", 8), ("agent/tools/history.py", 7)]
    assert all("define_state" in d.message for d in result.diagnostics.items)


# --- artifacts ---------------------------------------------------------------------------------


def artifact_bytes(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in (root / ".eve").rglob("*")
        if p.is_file() and ".eve/cache" not in p.relative_to(root).as_posix()
    }


def test_output_is_deterministic_and_relocatable(make_app: AppFactory, tmp_path: Path) -> None:
    first = make_app(CLOSURE_APP, new_database=True)  # .eve holds the artifacts alone
    compile_to_disk(first)
    once = artifact_bytes(first)
    compile_to_disk(first)
    assert artifact_bytes(first) == once
    moved = tmp_path / "somewhere" / "else"
    shutil.copytree(first, moved, ignore=shutil.ignore_patterns(".eve", "__pycache__"))
    compile_to_disk(moved)
    assert artifact_bytes(moved) == once
    blob = b"".join(once.values())
    assert str(tmp_path).encode() not in blob
    assert sorted(once) == [
        ".eve/compile/compile-metadata.json",
        ".eve/compile/compiled-agent-manifest.json",
        ".eve/compile/module_map.py",
        ".eve/discovery/agent-discovery-manifest.json",
        ".eve/discovery/diagnostics.json",
    ]
    for rel, data in once.items():
        if rel.endswith(".json"):
            parsed: dict[str, Any] = json.loads(data)
            assert parsed["schema_version"] == SCHEMA_VERSION and parsed["kind"].startswith("eve-")
            assert data.endswith(b"}\n") and data.startswith(b'{\n  "')


def test_failed_compile_keeps_the_last_good_artifacts(make_app: AppFactory) -> None:
    root = make_app({"agent/tools/ok.py": DECORATED_TOOL})
    compile_to_disk(root)
    good = artifact_bytes(root)
    (root / "agent/tools/ok.py").write_text("raise ImportError('broken on purpose')\n")
    with pytest.raises(CompileFailed) as failure:
        compile_to_disk(root)
    assert [d.code for d in failure.value.diagnostics] == ["compile/import-failed"]
    assert artifact_bytes(root) == good


def test_module_map_and_manifest_share_the_fingerprint(make_app: AppFactory) -> None:
    root = make_app(CLOSURE_APP)
    compile_to_disk(root)
    manifest = json.loads((root / ".eve/compile/compiled-agent-manifest.json").read_text())
    module_map = (root / ".eve/compile/module_map.py").read_text()
    assert f'FINGERPRINT = "{manifest["fingerprint"]}"' in module_map
    assert '"tools/price.py": _lazy("agent.tools.price")' in module_map
    assert "tools/search.py" not in module_map  # provider tools have no runtime loader


def test_compile_loads_and_runtime_roots_are_recorded_separately(make_app: AppFactory) -> None:
    result = compile_agent(make_app(CLOSURE_APP))
    assert result.manifest is not None
    node = result.manifest.nodes["__root__"]
    assert node.compile_loads == ["agent.py", "tools/price.py", "tools/search.py"]
    assert node.runtime_roots == ["tools/price.py"]


def test_a_failing_agent_package_init_is_a_diagnostic(make_app: AppFactory) -> None:
    root = make_app({"agent/__init__.py": "raise RuntimeError('no init for you')\n"})
    result = compile_agent(root)
    assert [(d.code, d.source_path) for d in result.diagnostics.items] == [
        ("compile/import-failed", "agent/__init__.py"),
    ]
    assert "no init for you" in result.diagnostics.items[0].message


def test_the_cache_changes_nothing_but_speed(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/tools/weather.py": PYDANTIC_TOOL,
            "agent/tools/mut.py": CLOSURE_APP["agent/tools/price.py"],
        }
    )
    cold = compile_agent(root)
    compile_to_disk(root)  # writes .eve/cache/
    assert (root / ".eve/cache/compile-cache.json").is_file()
    warm = compile_agent(root, cache=CompileCache.load(root))
    assert warm.artifacts == cold.artifacts
    # an edited docstring changes the schema even though the core schema is the same
    (root / "agent/tools/weather.py").write_text(
        PYDANTIC_TOOL.replace("class Input(BaseModel):", "class Input(BaseModel):\n    'Where.'")
    )
    edited = compile_agent(root, cache=CompileCache.load(root))
    assert edited.manifest is not None
    weather = next(t for t in edited.manifest.nodes["__root__"].tools if t.name == "weather")
    assert weather.input_schema is not None and weather.input_schema["description"] == "Where."
    (root / ".eve/cache/compile-cache.json").write_text("{not json")
    assert (
        compile_agent(root, cache=CompileCache.load(root)).artifacts
        == compile_agent(root).artifacts
    )


def test_an_imported_definition_is_not_a_second_candidate(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/lib/shared.py": "from eve.tools import define_tool\nhelper = define_tool(description='Shared.', execute=print)\n",
            "agent/tools/own.py": "from agent.lib.shared import helper\nfrom eve.tools import define_tool\n"
            "mine = define_tool(description='Mine.', execute=print)\n",
            "agent/tools/reexport.py": "from agent.lib.shared import helper\n",
        }
    )
    tools = tools_of(root)
    assert (tools["own"].export_name, tools["own"].description) == ("mine", "Mine.")
    assert (tools["reexport"].export_name, tools["reexport"].description) == ("helper", "Shared.")


def test_every_tool_entry_on_disk_says_whether_it_executes_here(make_app: AppFactory) -> None:
    """``has_execute`` is in each tool entry of the manifest file, as the kind says: eve runs
    a function or workflow tool, the provider runs a provider tool."""
    root = make_app(
        {
            "agent/tools/weather.py": PYDANTIC_TOOL,
            "agent/tools/search.py": PROVIDER_TOOL,
            "agent/tools/ask.py": WORKFLOW_TOOL,
        }
    )
    compile_to_disk(root)
    written = json.loads((root / ".eve/compile/compiled-agent-manifest.json").read_text())
    entries = {t["name"]: t for t in written["nodes"]["__root__"]["tools"]}
    assert {name: (t["kind"], t["has_execute"]) for name, t in entries.items()} == {
        "ask": ("workflow-tool", True),
        "search": ("provider-tool", False),
        "weather": ("dispatch", True),
    }


@pytest.mark.parametrize(("kind", "wrong"), [("dispatch", False), ("provider-tool", True)])
def test_a_manifest_whose_has_execute_contradicts_the_kind_is_refused(
    make_app: AppFactory, kind: str, wrong: bool
) -> None:
    root = make_app(
        {"agent/tools/weather.py": PYDANTIC_TOOL, "agent/tools/search.py": PROVIDER_TOOL}
    )
    compile_to_disk(root)
    path = root / ".eve/compile/compiled-agent-manifest.json"
    data = json.loads(path.read_text())
    for tool in data["nodes"]["__root__"]["tools"]:
        if tool["kind"] == kind:
            tool["has_execute"] = wrong
    with pytest.raises(msgspec.ValidationError, match=f"a {kind} tool has has_execute"):
        decode(json.dumps(data).encode(), CompiledManifest)


def test_a_tool_function_named_unlike_its_file_is_a_warning(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/tools/forecast.py": """
                from eve.tools import tool

                @tool
                def get_weather(city: str) -> str:
                    '''The weather.'''
                    return city
            """,
            "agent/tools/add.py": DECORATED_TOOL,
        }
    )
    found = [c for c in codes(root) if c[0] == "compile/tool-name-mismatch"]
    assert found == [("compile/tool-name-mismatch", "agent/tools/forecast.py", 3)]  # @tool line


@pytest.mark.parametrize(
    "docstring",
    [
        "Get weather.\n\n    Args:\n        city: The city name.\n    ",
        "Get weather.\n\n    Parameters\n    ----------\n    city : str\n        The city name.\n    ",
        "Get weather.\n\n    :param city: The city name.\n    ",
    ],
    ids=["google", "numpy", "sphinx"],
)
def test_docstring_parameter_sections_describe_the_schema(
    make_app: AppFactory, docstring: str
) -> None:
    source = f'''
from eve.tools import tool

@tool
def weather(city: str) -> str:
    """{docstring}"""
    return city
'''
    tools = tools_of(make_app({"agent/tools/weather.py": source}))
    entry = tools["weather"]
    assert isinstance(entry, FunctionToolEntry)
    assert entry.input_schema["properties"]["city"]["description"] == "The city name."
    assert entry.description == "Get weather."  # the section is not repeated there
