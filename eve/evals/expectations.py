"""What a case expects, as small typed values, and how each one is checked against a run.

A tagged union (``Expectation``) checked by one ``match`` closed with ``assert_never``; the
judge, which asks a model, is checked by ``eve.evals.judge``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, assert_never

import jsonschema
import pydantic

from eve.manifest import ROOT_NODE_ID

if TYPE_CHECKING:
    from eve.evals.case_run import CaseRun

# --- matchers of values (a tool call's input, a typed output's field) ----------------------


@dataclass(frozen=True)
class Equals:
    """The value is exactly this."""

    value: Any


@dataclass(frozen=True)
class Subset:
    """The value is a mapping holding at least these keys with these values (recursively)."""

    value: Mapping[str, Any]


@dataclass(frozen=True)
class Where:
    """``predicate(value)`` is true; ``description`` names it in results."""

    predicate: Callable[[Any], bool]
    description: str = "a predicate"


Matcher = Equals | Subset | Where


def _subset(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and _subset(value, actual[key]) for key, value in expected.items()
        )
    return bool(expected == actual)


def matches(matcher: Matcher, value: Any) -> bool:
    """Whether ``value`` satisfies ``matcher``."""
    match matcher:
        case Equals(expected):
            return bool(expected == value)
        case Subset(expected):
            return _subset(expected, value)
        case Where(predicate):
            return bool(predicate(value))
        case _:
            assert_never(matcher)


def describe(matcher: Matcher) -> str:
    match matcher:
        case Equals(expected):
            return f"= {json.dumps(expected, default=str)}"
        case Subset(expected):
            return f"⊇ {json.dumps(expected, default=str)}"
        case Where(_, description):
            return f"where {description}"
        case _:
            assert_never(matcher)


# --- the expectations -----------------------------------------------------------------------


@dataclass(frozen=True)
class Called:
    """One expected tool call: the tool's name and, optionally, what its input must match."""

    tool: str
    input: Matcher | None = None

    def __str__(self) -> str:
        return self.tool if self.input is None else f"{self.tool}({describe(self.input)})"


TrajectoryOrder = Literal["exact", "in_order", "any_order"]


@dataclass(frozen=True, init=False)
class Trajectory:
    """The tool calls a node made: ``exact`` (these and no others, in order), ``in_order``
    (these in this order, others between allowed) or ``any_order`` (each of these, in any
    order, others allowed). A plain string is ``Called(name)``."""

    calls: tuple[Called, ...]
    order: TrajectoryOrder
    #: whose calls: ``__root__`` or a subagent's node id (``researcher``)
    node: str

    def __init__(
        self, *calls: Called | str, order: TrajectoryOrder = "exact", node: str = ROOT_NODE_ID
    ) -> None:
        wanted = tuple(Called(c) if isinstance(c, str) else c for c in calls)
        object.__setattr__(self, "calls", wanted)
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "node", node)


@dataclass(frozen=True)
class AnswerContains:
    """The final answer contains ``text``."""

    text: str
    ignore_case: bool = False


@dataclass(frozen=True)
class AnswerMatches:
    """The final answer matches the regular expression ``pattern`` (``re.search``)."""

    pattern: str


@dataclass(frozen=True)
class AnswerEquals:
    """The final answer is ``text`` (surrounding whitespace ignored)."""

    text: str


@dataclass(frozen=True)
class AnswerSchema:
    """The final answer is JSON valid against ``schema`` (the typed output, when the agent
    has ``output_schema``)."""

    schema: Mapping[str, Any]


@dataclass(frozen=True)
class OutputField:
    """A field of the typed output (a dotted ``path``: ``order.total``) matches."""

    path: str
    matcher: Matcher


@dataclass(frozen=True)
class MaxSteps:
    """The root agent made at most ``steps`` model requests over the whole case."""

    steps: int


@dataclass(frozen=True)
class MaxTokens:
    """The case used at most ``tokens`` tokens (input and output, subagents included)."""

    tokens: int


@dataclass(frozen=True)
class MaxCost:
    """The case cost at most ``usd`` (a case on an unpriced model costs nothing known)."""

    usd: float


@dataclass(frozen=True)
class Judge:
    """A model scores the conversation against ``rubric`` from 0 to 1; the case passes at
    ``threshold`` or above. ``model`` is any eve model id."""

    rubric: str
    model: str
    threshold: float = 0.7


#: what a custom check returns: True or None (passed), False or a reason (failed)
CheckResult = bool | str | None


@dataclass(frozen=True)
class Check:
    """A Python function of the run (``CaseRun``: its events and results)."""

    fn: Callable[[CaseRun], CheckResult]
    name: str = field(default="")


Expectation = (
    Trajectory
    | AnswerContains
    | AnswerMatches
    | AnswerEquals
    | AnswerSchema
    | OutputField
    | MaxSteps
    | MaxTokens
    | MaxCost
    | Judge
    | Check
)
EXPECTATION_TYPES = (
    Trajectory,
    AnswerContains,
    AnswerMatches,
    AnswerEquals,
    AnswerSchema,
    OutputField,
    MaxSteps,
    MaxTokens,
    MaxCost,
    Judge,
    Check,
)


def is_expectation(value: object) -> bool:
    return isinstance(value, EXPECTATION_TYPES)


@dataclass(frozen=True, kw_only=True)
class CheckOutcome:
    """One expectation's verdict: its label, whether it held, and what was seen."""

    name: str
    passed: bool
    seen: str = ""


def label(expectation: Expectation) -> str:
    """How an expectation is named in results."""
    match expectation:
        case Trajectory(calls, order, node):
            where = "" if node == ROOT_NODE_ID else f"{node}: "
            return f"trajectory {order} [{where}{', '.join(map(str, calls))}]"
        case AnswerContains(text):
            return f"answer contains {text!r}"
        case AnswerMatches(pattern):
            return f"answer matches /{pattern}/"
        case AnswerEquals(text):
            return f"answer equals {text!r}"
        case AnswerSchema():
            return "answer matches schema"
        case OutputField(path, matcher):
            return f"output.{path} {describe(matcher)}"
        case MaxSteps(steps):
            return f"steps ≤ {steps}"
        case MaxTokens(tokens):
            return f"tokens ≤ {tokens}"
        case MaxCost(usd):
            return f"cost ≤ ${usd}"
        case Judge(_, model, threshold):
            return f"judge {model} ≥ {threshold}"
        case Check(fn, name):
            return f"check {name or getattr(fn, '__name__', 'check')}"
        case _:
            assert_never(expectation)


def _trajectory(want: Trajectory, run: CaseRun) -> tuple[bool, str]:
    made = run.calls(want.node)
    seen = "calls: " + (", ".join(f"{c.name}({json.dumps(c.input)})" for c in made) or "none")

    def fits(expected: Called, index: int) -> bool:
        call = made[index]
        return call.name == expected.tool and (
            expected.input is None or matches(expected.input, call.input)
        )

    match want.order:
        case "exact":
            ok = len(made) == len(want.calls) and all(fits(e, i) for i, e in enumerate(want.calls))
        case "in_order":
            position = 0
            for expected in want.calls:
                while position < len(made) and not fits(expected, position):
                    position += 1
                position += 1
            ok = position <= len(made)
        case "any_order":
            free = list(range(len(made)))
            ok = True
            for expected in want.calls:
                found = next((i for i in free if fits(expected, i)), None)
                if found is None:
                    ok = False
                    break
                free.remove(found)
        case _:
            assert_never(want.order)
    return ok, seen


def _answer_value(run: CaseRun) -> Any:
    output = run.output
    if isinstance(output, pydantic.BaseModel):
        return output.model_dump(mode="json")
    if output is not None:
        return output
    return json.loads(run.final_text)


def _schema(schema: Mapping[str, Any], run: CaseRun) -> tuple[bool, str]:
    try:
        value = _answer_value(run)
    except json.JSONDecodeError as error:
        return False, f"the answer is not JSON ({error.msg}): {run.final_text[:200]!r}"
    try:
        jsonschema.validate(value, dict(schema))
    except jsonschema.ValidationError as error:
        return False, f"{error.message} at {error.json_path}"
    return True, ""


def _field(path: str, matcher: Matcher, run: CaseRun) -> tuple[bool, str]:
    try:
        value = _answer_value(run)
    except json.JSONDecodeError:
        return False, "no typed output and the answer is not JSON"
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False, f"no field {part!r} in {json.dumps(value, default=str)[:200]}"
        value = value[part]
    return matches(matcher, value), f"output.{path} = {json.dumps(value, default=str)}"


def _custom(check: Check, run: CaseRun) -> tuple[bool, str]:
    verdict = check.fn(run)
    if verdict is None or verdict is True:
        return True, ""
    return False, verdict if isinstance(verdict, str) else "the check returned False"


def _answer(run: CaseRun) -> str:
    return f"answer: {run.final_text[:200]!r}"


def check(expectation: Expectation, run: CaseRun) -> CheckOutcome:
    """Check one expectation that needs no model (``Judge`` is ``eve.evals.judge``'s)."""
    text = run.final_text
    match expectation:
        case Trajectory():
            ok, seen = _trajectory(expectation, run)
        case AnswerContains(wanted, ignore_case):
            found = wanted.lower() in text.lower() if ignore_case else wanted in text
            ok, seen = found, _answer(run)
        case AnswerMatches(pattern):
            ok, seen = re.search(pattern, text) is not None, _answer(run)
        case AnswerEquals(wanted):
            ok, seen = text.strip() == wanted.strip(), _answer(run)
        case AnswerSchema(schema):
            ok, seen = _schema(schema, run)
        case OutputField(path, matcher):
            ok, seen = _field(path, matcher, run)
        case MaxSteps(steps):
            ok, seen = run.steps <= steps, f"{run.steps} steps"
        case MaxTokens(tokens):
            ok, seen = run.tokens <= tokens, f"{run.tokens} tokens"
        case MaxCost(usd):
            cost = run.cost_usd or Decimal(0)
            ok, seen = cost <= Decimal(str(usd)), f"${cost}"
        case Check():
            ok, seen = _custom(expectation, run)
        case Judge():
            raise TypeError("a Judge is checked by eve.evals.judge, which asks its model")
        case _:
            assert_never(expectation)
    return CheckOutcome(name=label(expectation), passed=ok, seen=seen)


def finished(run: CaseRun) -> CheckOutcome:
    """The check every case starts with: each turn finished and every request was answered."""
    if run.error is not None:
        return CheckOutcome(name="finished", passed=False, seen=run.error)
    stopped = [r.stop_reason for r in run.results if r.stop_reason != "complete"]
    if stopped:
        return CheckOutcome(name="finished", passed=False, seen=f"turn stopped: {stopped[0]}")
    if run.unanswered:
        return CheckOutcome(name="finished", passed=False, seen=run.unanswered[0])
    return CheckOutcome(name="finished", passed=True)
