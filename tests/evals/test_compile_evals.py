"""Compiling agent/evals/: declarations read from the syntax tree, diagnostics with lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from eve.artifacts import check_artifacts
from eve.compiler import compile_agent, compile_to_disk
from eve.manifest import EvalCaseDeclaration, EvalDeclaration
from tests.conftest import AppFactory

GOOD = """
import sys
from eve.evals import Case, Reply, define_eval

sys.modules["eval_file_ran"] = sys  # compiling must never run this file

default = define_eval(
    model="offline/script:agent/evals/s.json",
    cases=[
        Case("first", "hi"),
        Case(name="second"),
    ],
)
"""


def diagnostics(root: Path) -> list[tuple[str, str | None, int | None]]:
    sink = compile_agent(root).diagnostics
    return [(d.code, d.source_path, d.line) for d in sink.items]


def test_an_eval_is_declared_without_being_run(make_app: AppFactory) -> None:
    import sys

    root = make_app({"agent/evals/smoke.py": GOOD, "agent/evals/s.json": "[]"})
    result = compile_agent(root)
    assert result.manifest is not None, result.diagnostics.items
    assert result.manifest.evals == [
        EvalDeclaration(
            name="smoke",
            logical_path="agent/evals/smoke.py",
            line=6,
            model="offline/script:agent/evals/s.json",
            cases=[
                EvalCaseDeclaration(name="first", line=9),
                EvalCaseDeclaration(name="second", line=10),
            ],
        )
    ]
    assert result.discovery.manifest().evals == ["agent/evals/smoke.py"]
    assert "eval_file_ran" not in sys.modules
    assert result.diagnostics.items == []  # the script beside it is no unknown file


def test_editing_an_eval_makes_the_artifacts_stale(make_app: AppFactory) -> None:
    root = make_app({"agent/evals/smoke.py": GOOD})
    compile_to_disk(root)
    assert check_artifacts(root).fresh
    (root / "agent/evals/smoke.py").write_text(GOOD.replace("first", "one"))
    assert not check_artifacts(root).fresh


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"agent/evals/bad.py": "define_eval(\n"}, ("compile/eval-syntax-invalid", 1)),
        ({"agent/evals/none.py": "x = 1\n"}, ("compile/eval-definition-missing", None)),
        (
            {"agent/evals/two.py": "a = define_eval(cases=[Case('a', 'x')])\nb = define_eval()\n"},
            ("compile/eval-definition-duplicate", 2),
        ),
        (
            {"agent/evals/empty.py": "x = 1\n\ndefault = define_eval(cases=[])\n"},
            ("compile/eval-cases-missing", 3),
        ),
        (
            {"agent/evals/dyn.py": "N = 'x'\ndefault = define_eval(cases=[\n  Case(N, 'hi')])\n"},
            ("compile/eval-case-name-invalid", 3),
        ),
        (
            {
                "agent/evals/dup.py": "default = define_eval(cases=[Case('a', 'x'),\n Case('a', 'y')])\n"
            },
            ("compile/eval-case-duplicate", 2),
        ),
        ({"agent/evals/Bad-Name.py": GOOD}, ("discover/eval-name-invalid", None)),
    ],
)
def test_a_bad_eval_file_is_a_diagnostic_with_file_and_line(
    make_app: AppFactory, files: dict[str, str], expected: tuple[str, int | None]
) -> None:
    root = make_app(files)
    [path] = files
    assert (expected[0], path, expected[1]) in diagnostics(root)
    assert compile_agent(root).manifest is None


def test_evals_in_a_subagent_are_ignored_with_a_warning(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/subagents/helper/agent.py": (
                "from eve import define_agent\ndefault = define_agent(description='Helps.')\n"
            ),
            "agent/subagents/helper/evals/x.py": GOOD,
            "agent/evals/notes.txt": "not an eval",
        }
    )
    found = diagnostics(root)
    assert ("discover/evals-not-at-root", "agent/subagents/helper/evals", None) in found
    assert ("discover/unknown-file", "agent/evals/notes.txt", None) in found
    assert compile_agent(root).manifest is not None
