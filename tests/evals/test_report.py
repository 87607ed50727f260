"""Reports: JUnit XML parsed back, the kept JSON, and what changed since the previous run."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

from eve.evals import AnswerContains, Case, Reply, define_eval
from eve.evals.report import build_report, compare, previous, save, to_junit
from eve.evals.runner import EvalOptions, LoadedEval, run_evals
from eve.execution.setup import AgentSetup

CASES = [
    Case("says hello", "hi", script=[Reply("hello")], expect=[AnswerContains("hello")]),
    Case("says bye", "hi", script=[Reply("hello")], expect=[AnswerContains("bye")]),
]


def _report(setup: AgentSetup, cases: list[Case], at: datetime):  # type: ignore[no-untyped-def]
    loaded = LoadedEval(name="greet", path="-", definition=define_eval(cases=cases))
    outcomes = asyncio.run(run_evals(setup, [loaded], EvalOptions()))
    return build_report([loaded], outcomes, started_at=at, model=None)


def test_junit_xml_parses_back(setup: AgentSetup) -> None:
    report = _report(setup, CASES, datetime.now(UTC))
    root = ET.fromstring(to_junit(report))
    [suite] = root.findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("greet", "2", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases["says hello"].find("failure") is None
    failed = cases["says bye"].find("failure")
    assert failed is not None and cases["says bye"].get("classname") == "greet"
    assert failed.get("message") == "answer contains 'bye': answer: 'hello'"


def test_kept_reports_and_what_changed(setup: AgentSetup, tmp_path: Path) -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    first = save(tmp_path, _report(setup, CASES, at))
    assert first.name == "2026-01-02T03-04-05.000Z.json"
    assert previous(tmp_path, before=first) is None
    fixed = [
        CASES[0],
        Case("says bye", "hi", script=[Reply("bye")], expect=[AnswerContains("bye")]),
    ]
    new = [*fixed, Case("new", "hi", script=[Reply("x")])]
    later = _report(setup, new, at + timedelta(seconds=1))
    second = save(tmp_path, later)
    before = previous(tmp_path, before=second)
    assert before is not None and before.cases[1].passed is False
    changes = {c.case: c for c in compare(before, later)}
    assert changes["says bye"].status == "newly passing"
    assert changes["says bye"].pass_rate_delta == 1.0
    assert changes["new"].status == "new" and changes["says hello"].status == "same"
    assert str(changes["says bye"]).startswith("greet / says bye: newly passing, pass rate +100%")
    assert [c.status for c in compare(later, before) if c.case == "new"] == ["gone"]
