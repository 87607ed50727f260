"""Discovery: alphabetical order, naming rules and diagnostics, without importing anything."""

from __future__ import annotations

from pathlib import Path

from eve.compiler.diagnostics import DiagnosticSink
from eve.compiler.discover import discover
from tests.conftest import AppFactory

TOOL = """
from eve.tools import tool
@tool
def {name}() -> str:
    \"\"\"Tool {name}.\"\"\"
    return "{name}"
"""


def run(root: Path) -> tuple[object, list[tuple[str, str, str | None]]]:
    sink = DiagnosticSink()
    found = discover(root, sink)
    return found, [(d.code, d.severity, d.source_path) for d in sink.items]


def test_tools_are_discovered_in_alphabetical_order(make_app: AppFactory) -> None:
    root = make_app({f"agent/tools/{n}.py": TOOL.format(name=n) for n in ["zeta", "alpha", "mid"]})
    found, diagnostics = run(root)
    assert diagnostics == []
    assert [name for name, _ in found.nodes["__root__"].tools] == ["alpha", "mid", "zeta"]


def test_discovery_imports_nothing(make_app: AppFactory) -> None:
    root = make_app({"agent/tools/boom.py": "raise SystemExit('imported!')\n"})
    found, diagnostics = run(root)
    assert diagnostics == []
    assert found.nodes["__root__"].tools == [("boom", "agent/tools/boom.py")]


def test_bad_tool_names_are_errors_with_a_suggestion(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/tools/GetWeather.py": "",
            "agent/tools/météo.py": "",
            "agent/tools/eve_search.py": "",
        }
    )
    sink = DiagnosticSink()
    discover(root, sink)
    by_path = {d.source_path: d for d in sink.items}
    assert by_path["agent/tools/GetWeather.py"].code == "discover/tool-name-invalid"
    assert "get_weather.py" in by_path["agent/tools/GetWeather.py"].message
    assert by_path["agent/tools/météo.py"].code == "discover/tool-name-invalid"
    assert by_path["agent/tools/eve_search.py"].code == "discover/tool-name-reserved"
    assert all(d.severity == "error" for d in sink.items)


def test_unknown_files_and_directories_are_warnings(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/tools/notes.txt": "x",
            "agent/notes.txt": "x",
            "agent/widgets/a.py": "",
            "agent/extensions/notes.md": "",
        }
    )
    _, diagnostics = run(root)
    assert ("discover/unknown-file", "warning", "agent/tools/notes.txt") in diagnostics
    assert ("discover/unknown-file", "warning", "agent/notes.txt") in diagnostics
    assert ("discover/unknown-directory", "warning", "agent/widgets") in diagnostics
    assert ("discover/unsupported-directory", "warning", "agent/extensions") in diagnostics


def test_skill_in_tools_and_module_in_skills_are_wrong_kind(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/tools/howto.md": "---\ndescription: x\n---\nbody\n",
            "agent/skills/helper.py": "",
        }
    )
    _, diagnostics = run(root)
    assert ("discover/wrong-definition-kind", "error", "agent/tools/howto.md") in diagnostics
    assert ("discover/wrong-definition-kind", "error", "agent/skills/helper.py") in diagnostics


def test_skills_need_front_matter_with_a_description(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/skills/good.md": "---\ndescription: 'Use it well.'\n---\n# Body\n",
            "agent/skills/bare.md": "# no front matter\n",
            "agent/skills/empty.md": "---\nname: x\n---\n",
            "agent/skills/open.md": "---\ndescription: never closed\n",
        }
    )
    found, diagnostics = run(root)
    skills = found.nodes["__root__"].skills
    assert [(s.name, s.description) for s in skills] == [("good", "Use it well.")]
    bad = {path for code, _, path in diagnostics if code == "discover/skill-frontmatter-invalid"}
    assert bad == {"agent/skills/bare.md", "agent/skills/empty.md", "agent/skills/open.md"}


def test_subagents_nest_and_need_agent_py(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/subagents/researcher/agent.py": "",
            "agent/subagents/researcher/subagents/checker/agent.py": "",
            "agent/subagents/orphan/instructions.md": "x",
            "agent/subagents/agent/agent.py": "",
            "agent/subagents/eve-helper/agent.py": "",
            "agent/subagents/evening/agent.py": "",
        }
    )
    found, diagnostics = run(root)
    assert list(found.nodes) == [
        "__root__",
        "evening",
        "orphan",
        "researcher",
        "researcher/checker",
    ]
    assert found.nodes["researcher"].subagents == ["researcher/checker"]
    assert (
        "discover/required-subagent-config-module-missing",
        "error",
        "agent/subagents/orphan",
    ) in diagnostics
    assert ("discover/subagent-id-invalid", "error", "agent/subagents/agent") in diagnostics
    # ids beginning with eve are the built-ins' (evening is fine)
    assert ("discover/subagent-id-invalid", "error", "agent/subagents/eve-helper") in diagnostics


def test_instructions_are_required_at_the_root(make_app: AppFactory) -> None:
    root = make_app({"agent/agent.py": ""}, minimal=False)
    _, diagnostics = run(root)
    assert ("discover/required-instructions-missing", "error", "agent") in diagnostics


def test_tool_and_subagent_with_one_name_collide(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/tools/helper.py": TOOL.format(name="helper"),
            "agent/subagents/helper/agent.py": "",
        }
    )
    _, diagnostics = run(root)
    assert ("discover/slot-collision", "error", "agent/subagents/helper") in diagnostics


def test_caches_tests_and_dotfiles_are_ignored(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/tools/__pycache__/x.cpython-311.pyc": "",
            "agent/tools/test_thing.py": "",
            "agent/.hidden": "",
            "agent/tests/test_a.py": "",
        }
    )
    found, diagnostics = run(root)
    assert diagnostics == []
    assert sorted(found.sources) == ["agent/agent.py", "agent/instructions.md"]


def test_missing_agent_directory_is_an_error(tmp_path: Path) -> None:
    _, diagnostics = run(tmp_path)
    assert diagnostics == [("discover/agent-directory-missing", "error", None)]
