"""Running one case of an eval defined in a test."""

from __future__ import annotations

import asyncio

from eve.evals import Case, define_eval
from eve.evals.runner import LoadedEval, RunOutcome, run_case
from eve.execution.setup import AgentSetup


def run_one(setup: AgentSetup, case: Case, **eval_options: object) -> RunOutcome:
    definition = define_eval(cases=[case], **eval_options)  # type: ignore[arg-type]
    loaded = LoadedEval(name="t", path="agent/evals/t.py", definition=definition)
    return asyncio.run(run_case(setup, loaded, case))


def failure(outcome: RunOutcome) -> str:
    first = outcome.first_failure
    return "" if first is None else f"{first.name}: {first.seen}"
