"""Running one case of an eval defined in a test."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from eve.evals import Case, define_eval
from eve.evals.runner import LoadedEval, RunOutcome, run_case
from eve.execution.setup import AgentSetup
from eve.runtime.connections import close_pool


def run_one(setup: AgentSetup, case: Case, **eval_options: object) -> RunOutcome:
    definition = define_eval(cases=[case], **eval_options)  # type: ignore[arg-type]
    loaded = LoadedEval(name="t", path="agent/evals/t.py", definition=definition)
    return asyncio.run(_closing(run_case(setup, loaded, case)))


async def _closing(run: Coroutine[Any, Any, RunOutcome]) -> RunOutcome:
    try:
        return await run
    finally:
        await close_pool()  # an agent with connections: its servers end with the loop


def failure(outcome: RunOutcome) -> str:
    first = outcome.first_failure
    return "" if first is None else f"{first.name}: {first.seen}"
