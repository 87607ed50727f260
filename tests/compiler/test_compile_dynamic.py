"""Compiling ``instructions.py`` and ``define_agent(deps=...)``: where the manifest says each
function is, the diagnostics of a file that defines neither properly, and ``eve info``."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from eve.cli.main import main
from eve.compiler import compile_agent, compile_to_disk
from eve.manifest import Deps, DynamicInstructions
from tests.conftest import AppFactory

DYNAMIC = """
    from eve import define_instructions

    @define_instructions
    def instructions(ctx) -> str:
        return "Today is a good day."
"""

AGENT_WITH_DEPS = """
    from eve import define_agent

    def make_deps(info):
        return {"session": info.session_id}

    default = define_agent(deps=make_deps)
"""

SUBAGENT = """
    from eve import define_agent
    default = define_agent(description="Looks things up.")
"""


#: an agent with deps and instructions.py, and a subagent that inherits the deps
WITH_CLERK = {
    "agent/agent.py": AGENT_WITH_DEPS,
    "agent/instructions.py": DYNAMIC,
    "agent/subagents/clerk/agent.py": SUBAGENT,
}


def codes(root: Path) -> list[str]:
    return [d.code for d in compile_agent(root).diagnostics.items]


def test_the_manifest_says_where_instructions_py_and_the_deps_factory_are(
    make_app: AppFactory,
) -> None:
    root = make_app({**WITH_CLERK, "agent/subagents/clerk/instructions.py": DYNAMIC})
    manifest = compile_to_disk(root).manifest
    assert manifest is not None
    node = manifest.nodes["__root__"]
    assert node.instructions.text == "Be helpful.\n"
    assert node.instructions.dynamic == DynamicInstructions(
        logical_path="agent/instructions.py",
        source_id="instructions.py",
        export_name="instructions",
    )
    assert node.config.deps == Deps(logical_path="agent/agent.py", source_id="agent.py")
    # both are imported again at run time: runtime roots, with loaders in the module map
    assert {"agent.py", "instructions.py"} <= set(node.runtime_roots)
    assert node.bindings["instructions.py"].usage.runtime_entry
    clerk = manifest.nodes["clerk"]
    assert clerk.instructions.logical_path is None
    assert clerk.instructions.dynamic is not None
    assert clerk.config.deps is None  # inherited at resolve time, not copied here


def test_instructions_py_that_defines_no_instructions_is_a_diagnostic(
    make_app: AppFactory,
) -> None:
    plain = "def instructions(ctx):\n    return 'no decorator'\n"
    assert codes(make_app({"agent/instructions.py": plain})) == ["compile/export-missing"]
    two_arguments = DYNAMIC.replace("(ctx)", "(ctx, more)")
    assert codes(make_app({"agent/instructions.py": two_arguments})) == ["compile/import-failed"]


def test_a_deps_that_is_no_factory_is_a_diagnostic_at_its_line(make_app: AppFactory) -> None:
    agent = "from eve import define_agent\ndefault = define_agent(deps=lambda a, b: None)\n"
    result = compile_agent(make_app({"agent/agent.py": agent}))
    [problem] = result.diagnostics.items
    assert (problem.code, problem.source_path, problem.line) == (
        "compile/import-failed",
        "agent/agent.py",
        2,
    )
    assert "the factory must take one argument, the turn's TurnInfo" in problem.message


def test_the_root_needs_instructions_md_or_instructions_py(make_app: AppFactory) -> None:
    root = make_app({"agent/instructions.py": DYNAMIC})
    (root / "agent/instructions.md").unlink()
    assert codes(root) == []
    (root / "agent/instructions.py").unlink()
    assert codes(root) == ["discover/required-instructions-missing"]


def test_eve_info_shows_the_dynamic_prompt_and_whose_deps_a_node_uses(
    make_app: AppFactory,
) -> None:
    root = make_app(WITH_CLERK)
    compile_to_disk(root)
    shown = CliRunner().invoke(main, ["-C", str(root), "info"])
    assert shown.exit_code == 0, shown.output
    assert (
        "  instructions: agent/instructions.md + agent/instructions.py (evaluated each turn)\n"
        "  deps: the factory of agent/agent.py\n"
    ) in shown.output
    assert "    deps: the factory of agent/agent.py, inherited from the root\n" in shown.output
