"""``agent/channels/``: discovered at the root, compiled into declarations, listed, checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from bench.channel_probes.custom import SOURCE as INBOX
from eve.authoring.channels import ChannelDefinition
from eve.channels import a2a, ai_sdk, define_channel
from eve.channels.kind_modules import load_kind
from eve.channels.kinds import KIND_MODULES
from eve.cli import main
from eve.compiler import compile_agent, compile_to_disk
from eve.compiler.channels import CHANNELS_PREFIX, RESERVED_PREFIXES
from eve.errors import AuthoringError, ChannelKindUnavailable
from eve.manifest import ROOT_NODE_ID, ChannelEntry
from eve.server.app import PREFIX
from eve.server.web_ui import UI_PATH_PREFIX
from tests.conftest import AppFactory

TEST_KIND = "tests.channels.kind_for_tests"


@pytest.fixture
def test_kind(monkeypatch: pytest.MonkeyPatch) -> str:
    """``ai_sdk`` served by the tests' kind module, whatever this eve ships for it."""
    monkeypatch.setitem(KIND_MODULES, "ai_sdk", TEST_KIND)
    return "ai_sdk"


def channel(call: str) -> str:
    return f"from eve.channels import ai_sdk, a2a, define_channel\n\ndefault = {call}\n"


def compiled(make_app: AppFactory, files: dict[str, str]) -> tuple[list[ChannelEntry], list[str]]:
    result = compile_agent(make_app(files))
    shown = [
        f"{d.severity} {d.code} {d.source_path}:{d.line} {d.message}"
        for d in result.diagnostics.items
    ]
    entries = result.manifest.nodes[ROOT_NODE_ID].channels if result.manifest else []
    return entries, shown


def test_a_channel_is_a_declaration_with_its_default_path(
    make_app: AppFactory, test_kind: str
) -> None:
    entries, shown = compiled(
        make_app,
        {
            "agent/channels/chat.py": channel('ai_sdk(greeting="hi")'),
            "agent/channels/inbox.py": INBOX,
        },
    )
    assert shown == []
    chat, inbox = entries
    assert (chat.name, chat.kind, chat.url_path) == ("chat", "ai_sdk", f"{CHANNELS_PREFIX}/chat")
    assert chat.options == {"greeting": "hi"} and not chat.has_handler
    assert [(r.method, r.url_path) for r in chat.routes] == [("POST", "/channels/chat")]
    assert (inbox.kind, inbox.has_handler, inbox.source_id) == (
        "custom",
        True,
        "channels/inbox.py",
    )
    assert ("GET", "/channels/inbox/{session_id}/log") in [
        (r.method, r.url_path) for r in inbox.routes
    ]


def test_only_a_define_channel_module_is_a_runtime_entry(
    make_app: AppFactory, test_kind: str
) -> None:
    root = make_app(
        {"agent/channels/chat.py": channel("ai_sdk()"), "agent/channels/inbox.py": INBOX}
    )
    result = compile_agent(root)
    assert result.manifest is not None
    node = result.manifest.nodes[ROOT_NODE_ID]
    usage = {source: node.bindings[source].usage for source in node.bindings}
    assert (usage["channels/chat.py"].compile, usage["channels/chat.py"].runtime_entry) == (
        True,
        False,
    )
    assert usage["channels/inbox.py"].runtime_entry
    assert "channels/inbox.py" in node.runtime_roots


def test_options_are_checked_against_the_kinds_options(
    make_app: AppFactory, test_kind: str
) -> None:
    _, shown = compiled(make_app, {"agent/channels/chat.py": channel("ai_sdk(greting='hi')")})
    [problem] = shown
    assert problem.startswith("error compile/channel-options-invalid agent/channels/chat.py:3 ")
    assert "greting" in problem and "docs/channels/ai_sdk.md" in problem


def test_secret_values_in_options_are_refused(make_app: AppFactory, test_kind: str) -> None:
    _, shown = compiled(
        make_app,
        {
            "agent/channels/chat.py": channel('ai_sdk(signing_secret="8f3c2a9b71d04e6f")'),
            "agent/channels/talk.py": channel('ai_sdk(greeting="xoxb-1234-abcd", path="/talk")'),
            "agent/channels/env.py": channel('ai_sdk(signing_secret_env="xoxb-12 34", path="/e")'),
        },
    )
    codes = sorted(line.split()[1:3] for line in shown)  # type: ignore[misc]
    assert codes == [
        ["compile/channel-option-not-env-name", "agent/channels/env.py:3"],
        ["compile/channel-secret-literal", "agent/channels/chat.py:3"],
        ["compile/channel-secret-literal", "agent/channels/talk.py:3"],
    ]
    assert all("8f3c2a9b71d04e6f" not in line and "xoxb-1234" not in line for line in shown)


def test_paths_under_eves_routes_or_another_channel_are_refused(
    make_app: AppFactory, test_kind: str
) -> None:
    _, shown = compiled(
        make_app,
        {
            "agent/channels/api.py": channel('ai_sdk(path="/eve/v1/chat")'),
            "agent/channels/ui.py": channel('ai_sdk(path="/ui")'),
            "agent/channels/chat.py": channel('ai_sdk(path="/chat")'),
            "agent/channels/nested.py": channel('ai_sdk(path="/chat/more")'),
        },
    )
    found = sorted(line.split()[1:3] for line in shown)  # type: ignore[misc]
    assert found == [
        ["compile/channel-path-collision", "agent/channels/nested.py:3"],
        ["compile/channel-path-reserved", "agent/channels/api.py:3"],
        ["compile/channel-path-reserved", "agent/channels/ui.py:3"],
    ]


def test_the_reserved_prefixes_are_where_the_server_routes_are() -> None:
    assert any(PREFIX.startswith(p + "/") for p in RESERVED_PREFIXES)
    assert UI_PATH_PREFIX.rstrip("/") in RESERVED_PREFIXES


def test_a_subagents_channels_and_bad_names_are_diagnostics(make_app: AppFactory) -> None:
    _, shown = compiled(
        make_app,
        {
            "agent/subagents/helper/agent.py": (
                "from eve import define_agent\ndefault = define_agent(description='helps')\n"
            ),
            "agent/subagents/helper/channels/chat.py": channel("ai_sdk()"),
            "agent/channels/Chat-Room.py": channel("ai_sdk()"),
            "agent/channels/tool.py": "from eve.tools import tool\n\n@tool\ndef t() -> str:\n"
            "    '''A tool.'''\n    return ''\n",
        },
    )
    codes = sorted(line.split()[1] for line in shown)
    assert codes == [
        "compile/wrong-definition-kind",
        "discover/channel-name-invalid",
        "discover/channels-not-at-root",
    ]


def test_a_kind_that_cannot_load_is_checked_as_data_and_reported(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(KIND_MODULES, "a2a", "eve.channels.kinds.not_in_this_eve")
    entries, shown = compiled(make_app, {"agent/channels/agents.py": channel("a2a()")})
    assert [e.kind for e in entries] == ["a2a"]
    [warning] = shown
    assert warning.startswith("warning compile/channel-kind-unavailable agent/channels/agents.py:3")
    assert "not part of this version of eve" in warning


def test_a_missing_protocol_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(KIND_MODULES, "mcp", "tests.channels.kind_missing_package")
    with pytest.raises(ChannelKindUnavailable) as raised:
        load_kind("mcp")
    assert (raised.value.missing, raised.value.extra) == ("mcp", "mcp")
    assert "pip install 'eve-durable[mcp]'" in str(raised.value)


def test_eve_serve_refuses_to_start_with_a_kind_it_cannot_load(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(KIND_MODULES, "mcp", "tests.channels.kind_missing_package")
    root = make_app({"agent/channels/tools.py": "from eve.channels import mcp\ndefault = mcp()\n"})
    compile_to_disk(root)
    done = CliRunner().invoke(
        main, ["-C", str(root), "serve", "--port", "0", "--model", "offline/test"]
    )
    assert done.exit_code == ChannelKindUnavailable.exit_code == 2
    assert "channel kind 'mcp' needs the package 'mcp'" in done.output
    assert "eve-durable[mcp]" in done.output


def test_info_lists_the_channels(make_app: AppFactory, test_kind: str) -> None:
    root = make_app(
        {"agent/channels/chat.py": channel("ai_sdk()"), "agent/channels/inbox.py": INBOX}
    )
    compile_to_disk(root)
    document = json.loads(CliRunner().invoke(main, ["-C", str(root), "info", "--json"]).output)
    text = CliRunner().invoke(main, ["-C", str(root), "info"]).output
    rows = [(c["name"], c["kind"], c["method"], c["url_path"]) for c in document["channels"]]
    assert rows[0] == ("chat", "ai_sdk", "POST", "/channels/chat")
    assert ("inbox", "custom", "GET", "/channels/inbox/{session_id}/log") in rows
    assert "channel chat (ai_sdk): POST /channels/chat" in text


def test_definitions_refuse_impossible_arguments() -> None:
    async def handler(request: object, sessions: object) -> None:
        return None

    with pytest.raises(AuthoringError, match="METHOD /sub-path"):
        define_channel(routes=["FETCH /"], handler=handler)  # type: ignore[arg-type]
    with pytest.raises(AuthoringError, match="at least one route"):
        define_channel(routes=[], handler=handler)  # type: ignore[arg-type]
    with pytest.raises(AuthoringError, match="async def handler"):
        define_channel(routes=["POST /"], handler=print)  # type: ignore[arg-type]
    with pytest.raises(AuthoringError, match="absolute URL path"):
        ai_sdk(path="chat/")
    declared = a2a(path="/agents", api_key_env="A2A_KEY")
    assert isinstance(declared, ChannelDefinition)
    assert (declared.kind, declared.path, declared.options) == (
        "a2a",
        "/agents",
        {"api_key_env": "A2A_KEY"},
    )
    assert declared.defined_in == __name__


def test_importing_eve_channels_and_compile_check_load_no_kind(make_app: AppFactory) -> None:
    root = make_app({"agent/channels/inbox.py": INBOX})
    compile_to_disk(root)
    probe = (
        "import sys, eve.channels\n"
        "from eve.cli import main\n"
        "light = sorted(m for m in sys.modules if m.startswith(('starlette', 'eve.channels.')))\n"
        "try:\n    main(['-C', sys.argv[1], 'compile', '--check'])\n"
        "except SystemExit as done:\n    code = done.code\n"
        "kinds = sorted(m for m in sys.modules if m.startswith(('eve.channels.kinds.', 'agent')))\n"
        "import json\nprint(json.dumps([light, code, kinds]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(root)], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == [[], 0, []]


def test_the_options_written_are_the_ones_authored(make_app: AppFactory, test_kind: str) -> None:
    root = make_app({"agent/channels/chat.py": channel('ai_sdk(greeting="hey")')})
    compile_to_disk(root)
    manifest = json.loads((root / ".eve/compile/compiled-agent-manifest.json").read_text())
    [entry] = manifest["nodes"][ROOT_NODE_ID]["channels"]
    assert msgspec.convert(entry, ChannelEntry).options == {"greeting": "hey"}
    assert Path(root / entry["logical_path"]).is_file()
