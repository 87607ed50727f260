"""The results of one ``eve eval``: a JSON report (kept under ``.eve/evals/``), JUnit XML, and
what changed against the previous run."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import msgspec

from eve.evals.runner import LoadedEval, RunOutcome

RESULTS_DIR = ".eve/evals"


class CheckRecord(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    passed: bool
    #: what was seen (the calls made, the answer, the score)
    seen: str = ""


class RunRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One run of a case."""

    attempt: int
    passed: bool
    model: str
    steps: int
    tokens: int
    #: USD as a decimal string; None when no call was priced
    cost_usd: str | None
    seconds: float
    #: why the run stopped early (a timeout, an error a turn raised), else None
    error: str | None
    checks: list[CheckRecord]


class CaseRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A case over all its runs: it passes when its pass rate reaches the eval's minimum."""

    eval: str
    case: str
    passed: bool
    pass_rate: float
    runs: list[RunRecord]

    @property
    def tokens(self) -> float:
        return sum(r.tokens for r in self.runs) / len(self.runs)

    @property
    def cost_usd(self) -> float | None:
        costs = [float(r.cost_usd) for r in self.runs if r.cost_usd is not None]
        return sum(costs) / len(self.runs) if costs else None

    def first_failure(self) -> str:
        """``name: seen`` of the first failed check of the first failed run."""
        for run in self.runs:
            for check in run.checks:
                if not check.passed:
                    return f"{check.name}: {check.seen}" if check.seen else check.name
        return ""


class EvalReport(msgspec.Struct, frozen=True, kw_only=True):
    """``.eve/evals/<timestamp>.json``."""

    kind: Literal["eve-eval-report"] = "eve-eval-report"
    #: when the run started (ISO-8601 UTC)
    started_at: str
    #: ``eve eval --model``, when given
    model: str | None = None
    passed: bool
    cases: list[CaseRecord]


def _run_record(outcome: RunOutcome) -> RunRecord:
    run = outcome.run
    return RunRecord(
        attempt=outcome.attempt,
        passed=outcome.passed,
        model=run.model,
        steps=run.steps,
        tokens=run.tokens,
        cost_usd=None if run.cost_usd is None else str(run.cost_usd),
        seconds=round(run.seconds, 3),
        error=run.error,
        checks=[CheckRecord(name=c.name, passed=c.passed, seen=c.seen) for c in outcome.checks],
    )


def build_report(
    evals: Sequence[LoadedEval],
    outcomes: Sequence[RunOutcome],
    *,
    started_at: datetime,
    model: str | None,
) -> EvalReport:
    cases = []
    for loaded in evals:
        for case in loaded.definition.cases:
            runs = [
                _run_record(o)
                for o in outcomes
                if o.eval_name == loaded.name and o.case == case.name
            ]
            rate = sum(r.passed for r in runs) / len(runs) if runs else 0.0
            passed = bool(runs) and rate >= loaded.definition.min_pass_rate
            cases.append(
                CaseRecord(
                    eval=loaded.name, case=case.name, passed=passed, pass_rate=rate, runs=runs
                )
            )
    return EvalReport(
        started_at=started_at.astimezone(UTC).isoformat(timespec="milliseconds"),
        model=model,
        passed=all(c.passed for c in cases),
        cases=cases,
    )


def to_junit(report: EvalReport) -> str:
    """JUnit XML: a ``testsuite`` per eval, a ``testcase`` per case (classname: the eval)."""
    root = ET.Element("testsuites", name="eve eval")
    for eval_name in dict.fromkeys(c.eval for c in report.cases):
        cases = [c for c in report.cases if c.eval == eval_name]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=eval_name,
            tests=str(len(cases)),
            failures=str(sum(not c.passed for c in cases)),
            time=f"{sum(r.seconds for c in cases for r in c.runs):.3f}",
        )
        for case in cases:
            element = ET.SubElement(
                suite,
                "testcase",
                name=case.case,
                classname=eval_name,
                time=f"{sum(r.seconds for r in case.runs):.3f}",
            )
            if not case.passed:
                failure = ET.SubElement(element, "failure", message=case.first_failure())
                failure.text = "\n".join(
                    f"run {r.attempt}: {c.name}: {c.seen}"
                    for r in case.runs
                    for c in r.checks
                    if not c.passed
                )
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def save(app_root: Path, report: EvalReport) -> Path:
    """Write the report as ``.eve/evals/<timestamp>.json`` and return its path."""
    directory = app_root / RESULTS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    stamp = report.started_at.replace(":", "-").replace("+00-00", "Z")
    path = directory / f"{stamp}.json"
    path.write_bytes(msgspec.json.format(msgspec.json.encode(report)) + b"\n")
    return path


def previous(app_root: Path, *, before: Path) -> EvalReport | None:
    """The newest report kept before ``before``, if any."""
    older = sorted(p for p in (app_root / RESULTS_DIR).glob("*.json") if p.name < before.name)
    if not older:
        return None
    try:
        return msgspec.json.decode(older[-1].read_bytes(), type=EvalReport)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


@dataclass(frozen=True, kw_only=True)
class Change:
    """How one case differs from the previous run."""

    eval: str
    case: str
    status: Literal["newly failing", "newly passing", "new", "gone", "same"]
    pass_rate_delta: float = 0.0
    tokens_delta: float = 0.0
    cost_delta: float | None = None

    def __str__(self) -> str:
        parts = [f"{self.eval} / {self.case}: {self.status}"]
        if self.pass_rate_delta:
            parts.append(f"pass rate {self.pass_rate_delta:+.0%}")
        if self.tokens_delta:
            parts.append(f"tokens {self.tokens_delta:+.0f}")
        if self.cost_delta:
            parts.append(f"cost {self.cost_delta:+.4f} USD")
        return ", ".join(parts)


def compare(old: EvalReport, new: EvalReport) -> list[Change]:
    """Each case of either report and what changed: status, pass rate, tokens, cost."""
    before = {(c.eval, c.case): c for c in old.cases}
    after = {(c.eval, c.case): c for c in new.cases}
    changes = []
    for key, case in after.items():
        was = before.get(key)
        if was is None:
            changes.append(Change(eval=key[0], case=key[1], status="new"))
            continue
        status: Literal["newly failing", "newly passing", "same"] = (
            "same"
            if was.passed == case.passed
            else ("newly passing" if case.passed else "newly failing")
        )
        cost = (
            case.cost_usd - was.cost_usd
            if case.cost_usd is not None and was.cost_usd is not None
            else None
        )
        changes.append(
            Change(
                eval=key[0],
                case=key[1],
                status=status,
                pass_rate_delta=case.pass_rate - was.pass_rate,
                tokens_delta=case.tokens - was.tokens,
                cost_delta=cost,
            )
        )
    changes.extend(
        Change(eval=key[0], case=key[1], status="gone") for key in before if key not in after
    )
    return changes
