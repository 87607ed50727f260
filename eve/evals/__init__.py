"""Evals: cases sent to the whole agent, and what they must show (``eve eval``).

An eval file, ``agent/evals/<name>.py``, defines one eval::

    from eve.evals import Approve, Case, Reply, ToolUse, Trajectory, define_eval

    default = define_eval(cases=[
        Case(
            "orders a hammer",
            "Order me a hammer",
            script=[Reply(calls=[ToolUse("place_order", {"item": "hammer"})]), Reply("Done.")],
            answers=[Approve("place_order")],
            expect=[Trajectory("place_order")],
        ),
    ])

The agent's runtime never imports these modules; ``eve compile`` reads them as text.
``run_case`` runs one case from Python as ``eve eval`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eve._lazy import lazy_attributes
from eve.evals.case_run import CaseRun
from eve.evals.definition import (
    Answer,
    Approve,
    Case,
    Choose,
    Deny,
    EvalDefinition,
    InlineScript,
    Reply,
    Stub,
    ToolUse,
    define_eval,
)
from eve.evals.expectations import (
    AnswerContains,
    AnswerEquals,
    AnswerMatches,
    AnswerSchema,
    Called,
    Check,
    CheckResult,
    Equals,
    Expectation,
    Judge,
    Matcher,
    MaxCost,
    MaxSteps,
    MaxTokens,
    OutputField,
    Subset,
    Trajectory,
    Where,
)

if TYPE_CHECKING:
    from eve.evals.judge import check_judge
    from eve.evals.runner import LoadedEval, RunOutcome, run_case

__all__ = [
    "Answer",
    "AnswerContains",
    "AnswerEquals",
    "AnswerMatches",
    "AnswerSchema",
    "Approve",
    "Called",
    "Case",
    "CaseRun",
    "Check",
    "CheckResult",
    "Choose",
    "Deny",
    "Equals",
    "EvalDefinition",
    "Expectation",
    "InlineScript",
    "Judge",
    "LoadedEval",
    "Matcher",
    "MaxCost",
    "MaxSteps",
    "MaxTokens",
    "OutputField",
    "Reply",
    "RunOutcome",
    "Stub",
    "Subset",
    "ToolUse",
    "Trajectory",
    "Where",
    "check_judge",
    "define_eval",
    "run_case",
]

# running cases loads the loop: only for a caller that runs one, never for an eval file
_LAZY = {
    "LoadedEval": "eve.evals.runner",
    "RunOutcome": "eve.evals.runner",
    "run_case": "eve.evals.runner",
    "check_judge": "eve.evals.judge",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
