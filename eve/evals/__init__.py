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
"""

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
    "Matcher",
    "MaxCost",
    "MaxSteps",
    "MaxTokens",
    "OutputField",
    "Reply",
    "Stub",
    "Subset",
    "ToolUse",
    "Trajectory",
    "Where",
    "define_eval",
]
