"""eve compile and eve info through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from eve.cli import main
from tests import forked
from tests.conftest import AppFactory

TOOL = """
from eve.tools import tool
@tool
def greet(name: str) -> str:
    'Greet someone.'
    return "hi " + name
"""


def eve(*args: str, root: Path) -> subprocess.CompletedProcess[str]:
    return forked.run(
        [sys.executable, "-m", "eve", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_compile_then_check_then_edit(make_app: AppFactory) -> None:
    root = make_app({"agent/tools/greet.py": TOOL})
    done = eve("compile", root=root)
    assert done.returncode == 0, done.stderr
    assert (
        "compiled agent/ → .eve/ (1 node(s), 1 tool(s), 0 skill(s); 0 error(s), 0 warning(s))"
        in done.stdout
    )
    check = eve("compile", "--check", root=root)
    assert (check.returncode, check.stdout.strip()) == (0, "eve: artifacts are fresh")
    (root / "agent/tools/greet.py").write_text(TOOL.replace("hi ", "hello "))
    (root / "agent/tools/wave.py").write_text(TOOL.replace("greet", "wave"))
    stale = eve("compile", "--check", root=root)
    assert stale.returncode == 1
    assert "changed: agent/tools/greet.py" in stale.stderr
    assert "added: agent/tools/wave.py" in stale.stderr
    assert "Run `eve compile`" in stale.stderr


def test_failed_compile_prints_every_diagnostic_and_exits_1(make_app: AppFactory) -> None:
    root = make_app({"agent/tools/greet.py": TOOL})
    assert eve("compile", root=root).returncode == 0
    before = (root / ".eve/compile/compiled-agent-manifest.json").read_bytes()
    (root / "agent/tools/BadName.py").write_text(TOOL)
    (root / "agent/tools/broken.py").write_text("import nonexistent_module_xyz\n")
    done = eve("compile", root=root)
    assert done.returncode == 1
    assert (
        "agent/tools/BadName.py: error:" in done.stderr
        and "[discover/tool-name-invalid]" in done.stderr
    )
    assert "agent/tools/broken.py:1: error: importing agent/tools/broken.py failed" in done.stderr
    assert "No module named 'nonexistent_module_xyz'" in done.stderr
    assert "previous artifacts were left in place" in done.stderr
    assert (root / ".eve/compile/compiled-agent-manifest.json").read_bytes() == before


def test_info_json_is_the_documented_document(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/tools/greet.py": TOOL,
            "agent/skills/etiquette.md": "---\ndescription: How to greet.\n---\nBow.\n",
            "agent/subagents/helper/agent.py": "from eve import define_agent\ndefault = define_agent(description='Helps.', model='offline/test')\n",
            "agent/subagents/helper/tools/greet.py": TOOL.replace(
                "name: str", "name: str, loud: bool = False"
            ),
        }
    )
    runner = CliRunner()
    assert runner.invoke(main, ["-C", str(root), "compile"]).exit_code == 0
    result = runner.invoke(main, ["-C", str(root), "info", "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert (info["kind"], info["version"], info["status"]) == ("eve-agent-info", 1, "fresh")
    assert info["diagnostics"] == {"errors": 0, "warnings": 0}
    assert info["agent"]["model"] == "offline/test"
    assert info["agent"]["instructions_path"] == "agent/instructions.md"
    # the subagent is a tool of its caller; a skill brings the automatic built-ins that find
    # and load it; the helper has none, and its own greet replaces the one it would inherit
    assert [(t["name"], t["handling"]) for t in info["agent"]["tools"]] == [
        ("greet", "dispatch"),
        ("helper", "subagent"),
        ("eve__search", "dispatch"),
        ("eve__skill", "dispatch"),
    ]
    assert info["agent"]["tools"][1]["input_schema"]["required"] == ["message"]
    assert info["agent"]["tools"][1]["description"] == "Helps."
    assert [(t["name"], t["inherited_from"]) for t in info["subagents"][0]["tools"]] == [
        ("greet", None)
    ]
    assert info["agent"]["skills"] == [{"name": "etiquette", "description": "How to greet."}]
    assert info["agent"]["subagents"] == ["helper"]
    [helper] = info["subagents"]
    assert (helper["path"], helper["description"]) == ("helper", "Helps.")
    assert set(helper["tools"][0]["input_schema"]["properties"]) == {"name", "loud"}
    assert info["artifacts"]["module_map"] == ".eve/compile/module_map.py"
    text = runner.invoke(main, ["-C", str(root), "info"])
    assert "tool greet(name)" in text.output and "subagent helper" in text.output


def test_info_without_artifacts_says_what_to_do(make_app: AppFactory) -> None:
    result = CliRunner().invoke(main, ["-C", str(make_app()), "info"])
    assert result.exit_code == 1
    assert "run `eve compile`" in result.output


def test_info_with_a_missing_diagnostics_file_says_what_to_do(make_app: AppFactory) -> None:
    root = make_app({"agent/tools/greet.py": TOOL})
    runner = CliRunner()
    assert runner.invoke(main, ["-C", str(root), "compile"]).exit_code == 0
    (root / ".eve/discovery/diagnostics.json").unlink()
    result = runner.invoke(main, ["-C", str(root), "info"])
    assert result.exit_code == 1
    assert "diagnostics.json is missing or unreadable" in result.output
    assert "run `eve compile`" in result.output
