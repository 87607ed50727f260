"""``eve eval`` through its real doors: click's runner, and one process for the exit code."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from eve.cli.main import main
from tests import forked
from tests.evals.conftest import copy_example

FAILING = """
from eve.evals import AnswerContains, Case, Reply, define_eval

default = define_eval(
    cases=[Case("expects bye", "hi", script=[Reply("hello")], expect=[AnswerContains("bye")])]
)
"""
BROKEN = """
from eve.evals import Case, define_eval

default = define_eval(cases=[Case("x", "hi", expect=["bye"])])
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_example(tmp_path_factory.mktemp("cli"))
    (root / "agent/evals/failing.py").write_text(FAILING)
    (root / "agent/evals/broken.py").write_text(BROKEN)
    return root


def eve(app: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["-C", str(app), "eval", *args])
    return result.exit_code, result.stdout, result.stderr


def test_passing_evals_exit_0_with_json_and_junit(app: Path) -> None:
    code, out, err = eve(app, "orders", "research", "--json", "--junit", str(app / "j.xml"))
    assert code == 0, err
    report = json.loads(out)
    assert report["kind"] == "eve-eval-report" and report["passed"] is True
    assert [c["case"] for c in report["cases"]] == [
        "orders a hammer once approved",
        "orders nothing when the person denies",
        "asks the researcher about last year's price",
    ]
    suites = ET.parse(app / "j.xml").getroot().findall("testsuite")
    assert [(s.get("name"), s.get("tests"), s.get("failures")) for s in suites] == [
        ("orders", "2", "0"),
        ("research", "1", "0"),
    ]
    kept = sorted((app / ".eve/evals").glob("*.json"))
    assert kept and json.loads(kept[-1].read_text())["cases"] == report["cases"]


def test_a_failing_case_exits_1_and_the_table_shows_why(app: Path) -> None:
    # a run of its own to compare with: the module's other tests may run in another xdist
    # worker, with an app of its own (it failed so in a run with ``--dist load``)
    assert eve(app, "orders")[0] == 0
    code, out, err = eve(app, "failing", "--repeat", "2", "--compare")
    assert code == 1
    [row] = [line for line in out.splitlines() if "expects bye" in line]
    assert "✗ failing / expects bye" in row and " 0/2 " in row
    assert "answer contains 'bye': answer: 'hello'" in row
    assert "eve: 0/1 case(s) passed; results in .eve/evals/" in err
    assert "compared with the run of" in err and "failing / expects bye: new" in err


def test_evals_that_cannot_run_exit_2_naming_the_error(app: Path) -> None:
    code, _, err = eve(app, "nosuch")
    assert code == 2
    assert err.startswith("eve: EvalNotFound: no eval named 'nosuch' (evals: broken, failing,")
    code, _, err = eve(app, "broken")
    assert code == 2
    assert err == (
        "eve: EvalLoadError: importing agent/evals/broken.py:4 failed: AuthoringError: case "
        "'x': 'bye' is not an expectation (Trajectory, AnswerContains, MaxSteps, Judge, Check, "
        "…)\n"
    )


def test_the_process_exit_code(app: Path) -> None:
    done = forked.run(
        [sys.executable, "-m", "eve", "-C", str(app), "eval", "orders"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "eve: 2/2 case(s) passed; results in .eve/evals/" in done.stderr
