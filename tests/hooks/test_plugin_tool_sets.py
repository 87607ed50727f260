"""Tool sets from plugins: ``eve_tool_sets`` through a real dist-info, compile to a turn."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
from click.testing import CliRunner

from eve.artifacts import check_artifacts
from eve.cli.main import main
from eve.compiler import compile_agent, compile_to_disk
from eve.manifest import (
    METADATA_PATH,
    CompileMetadata,
    Diagnostic,
    PluginDistribution,
    ProgrammaticBacking,
    decode,
)
from eve.runtime import load_compiled_agent, resolve_agent
from eve.runtime.resolved import ResolvedFunctionTool
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory
from tests.hooks.installed import install

TOOLS = """
from eve.hooks import hookimpl
from eve.tools import ToolSet, define_tool, tool


@tool
def shout(text: str) -> str:
    '''Say it louder.'''
    return text.upper() + "!"


whisper = define_tool(
    description="Say it softly.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    execute=lambda data, ctx: data["text"].lower(),
)


@hookimpl
def eve_tool_sets():
    return [ToolSet(name="voice", tools=[shout, whisper], description="loud and soft")]
"""
USES_VOICE = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(model="offline/test", tool_sets=("voice",))
    """
}


def only_errors(diagnostics: list[Diagnostic]) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in diagnostics if d.severity == "error"]


def voice_app(site: Path, make_app: AppFactory, files: dict[str, str] | None = None) -> Path:
    install(site, "eve_test_voice", TOOLS, "voice = eve_test_voice")
    return make_app({**USES_VOICE, **(files or {})})


def test_a_tool_set_compiles_into_the_node(site: Path, make_app: AppFactory) -> None:
    result = compile_to_disk(voice_app(site, make_app))
    assert result.manifest is not None
    node = result.manifest.nodes["__root__"]
    assert node.config.tool_sets == ["voice"]
    assert [(t.name, t.source_id, t.export_name) for t in node.tools] == [
        ("shout", "plugin:voice/shout", "shout"),
        ("whisper", "plugin:voice/whisper", "whisper"),
    ]
    assert node.tools[0].input_schema is not None
    assert node.tools[0].input_schema["required"] == ["text"]
    binding = node.bindings["plugin:voice/shout"]
    assert binding.backing == ProgrammaticBacking(
        registry_id="eve.plugins:voice", module_id="eve_test_voice"
    )
    assert (binding.owner.kind, binding.usage.runtime_entry) == ("extension", True)
    assert "plugin:voice/whisper" in node.runtime_roots


def test_the_module_map_binds_the_set_for_resolve_agent(site: Path, make_app: AppFactory) -> None:
    root = voice_app(site, make_app)
    compile_to_disk(root)
    module_map = (root / ".eve/compile/module_map.py").read_text()
    assert '"plugin:voice/shout": _lazy("eve_test_voice"),' in module_map
    compiled = load_compiled_agent(root)
    import asyncio

    agent = asyncio.run(resolve_agent(compiled.manifest, compiled.module_map))
    [shout] = [t for t in agent.tools if t.name == "shout"]
    assert isinstance(shout, ResolvedFunctionTool)


def test_eve_info_json_lists_the_set_tools(site: Path, make_app: AppFactory) -> None:
    root = voice_app(site, make_app)
    compile_to_disk(root)
    result = CliRunner().invoke(main, ["-C", str(root), "info", "--json"])
    assert result.exit_code == 0, result.output
    tools = json.loads(result.output)["agent"]["tools"]
    assert [(t["name"], t["source"]) for t in tools] == [
        ("shout", "plugin:voice/shout"),
        ("whisper", "plugin:voice/whisper"),
    ]
    text = CliRunner().invoke(main, ["-C", str(root), "info"]).output
    assert "tool shout(text) (from plugin:voice/shout)" in text


def test_the_model_calls_a_set_tool_in_a_turn(site: Path, make_app: AppFactory) -> None:
    root = voice_app(site, make_app)
    script = [
        {"tool_calls": [{"name": "shout", "input": {"text": "hi"}}]},
        {"tool_calls": [{"name": "whisper", "input": {"text": "QUIET"}}]},
        {"text": "said both"},
    ]
    (root / "script.json").write_text(json.dumps(script))
    done = eve_run(root, "speak", "--json", "--model", "offline/script:script.json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    results = [e["data"] for e in events if e["type"] == "action.result"]
    assert [(r["name"], r["status"], r["output"]) for r in results] == [
        ("shout", "completed", "HI!"),
        ("whisper", "completed", "quiet"),
    ]
    assert events[-1]["type"] == "turn.completed"


def test_compile_check_notices_a_plugin_upgrade(site: Path, make_app: AppFactory) -> None:
    root = voice_app(site, make_app)
    before = compile_to_disk(root).manifest
    metadata = decode((root / METADATA_PATH).read_bytes(), CompileMetadata)
    assert metadata.plugins == [
        PluginDistribution(entry_point="voice", distribution="eve_test_voice", version="0.1")
    ]
    assert check_artifacts(root).fresh
    install(site, "eve_test_voice", TOOLS, "voice = eve_test_voice", version="0.2")
    assert check_artifacts(root).plugins == [
        "eve_test_voice (plugin 'voice') is 0.2, compiled with 0.1"
    ]
    result = CliRunner().invoke(main, ["-C", str(root), "compile", "--check"])
    assert result.exit_code == 1
    assert "plugin: eve_test_voice (plugin 'voice') is 0.2, compiled with 0.1" in result.output
    after = compile_to_disk(root).manifest
    assert before is not None and after is not None
    assert after.fingerprint != before.fingerprint


def test_an_unknown_tool_set_lists_the_installed_ones(site: Path, make_app: AppFactory) -> None:
    install(site, "eve_test_voice", TOOLS, "voice = eve_test_voice")
    agent = "from eve import define_agent\ndefault = define_agent(tool_sets=('vocie',))\n"
    result = compile_agent(make_app({"agent/agent.py": agent}))
    assert only_errors(result.diagnostics.items) == [
        (
            "compile/tool-set-unknown",
            "no installed plugin provides the tool set 'vocie' (tool_sets in agent.py); "
            "installed tool sets: 'voice' (plugin 'voice': loud and soft). Install the package "
            "that provides it, or fix the name",
        )
    ]
    assert result.diagnostics.items[0].source_path == "agent/agent.py"


def test_a_set_tool_named_like_an_authored_tool(site: Path, make_app: AppFactory) -> None:
    shout = "from eve.tools import tool\n@tool\ndef shout() -> str:\n    'Mine.'\n    return ''\n"
    result = compile_agent(voice_app(site, make_app, {"agent/tools/shout.py": shout}))
    assert only_errors(result.diagnostics.items) == [
        (
            "compile/tool-set-collision",
            "the tool 'shout' of the tool set 'voice' (plugin 'voice') has the name of the "
            "authored tool agent/tools/shout.py; rename yours or leave the set out of tool_sets",
        )
    ]


def test_a_set_tool_named_like_a_built_in(site: Path, make_app: AppFactory) -> None:
    source = TOOLS.replace("def shout(", "def bash(").replace("[shout,", "[bash,")
    install(site, "eve_test_voice", source, "voice = eve_test_voice")
    result = compile_agent(make_app(USES_VOICE))
    [(code, message)] = only_errors(result.diagnostics.items)
    assert code == "compile/tool-set-collision"
    assert "the tool 'bash' of the tool set 'voice' (plugin 'voice') has the name of the " in (
        message
    )
    assert "the built-in tool 'bash'" in message


def test_a_set_tool_must_be_a_module_level_name(site: Path, make_app: AppFactory) -> None:
    source = TOOLS.replace(
        "[shout, whisper]", "[shout, define_tool(description='x', execute=print)]"
    )
    install(site, "eve_test_voice", source, "voice = eve_test_voice")
    result = compile_agent(make_app(USES_VOICE))
    [(code, message)] = only_errors(result.diagnostics.items)
    assert code == "compile/tool-set-tool-unbound"
    assert message.startswith(
        "a tool of the tool set 'voice' (plugin 'voice') is not bound to a module-level name "
        "in eve_test_voice;"
    )


def test_two_plugins_cannot_share_a_set_name(site: Path, make_app: AppFactory) -> None:
    install(site, "eve_test_echo", TOOLS, "echo = eve_test_echo")
    result = compile_agent(voice_app(site, make_app))
    [(code, message)] = only_errors(result.diagnostics.items)
    assert code == "compile/plugin-load-failed"
    assert message == (
        "the eve.plugins entry point 'voice' (eve_test_voice) provides the tool set 'voice', "
        "which is provided by the plugin 'echo'; uninstall one of them or ask its author to "
        "rename it"
    )


def test_an_agent_without_tool_sets_loads_no_plugin(site: Path, make_app: AppFactory) -> None:
    install(site, "eve_test_broken", "raise ImportError('no luck')", "broken = eve_test_broken")
    result = compile_agent(make_app())
    assert only_errors(result.diagnostics.items) == []
    metadata = msgspec.json.decode(result.artifacts[METADATA_PATH])
    assert metadata["plugins"] == []
