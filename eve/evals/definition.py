"""What an eval file writes: ``define_eval(cases=[Case(...)])``, scripts, answers and stubs.

Everything here is a frozen value; nothing runs until ``eve eval`` imports the file. The
expectations a case checks are in ``eve.evals.expectations``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eve.errors import AuthoringError
from eve.evals.expectations import Expectation, is_expectation
from eve.messages import UserMessage

#: how long one case (all its messages) may take before it fails as timed out
DEFAULT_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class ToolUse:
    """A tool call a scripted reply makes: ``ToolUse("get_price", {"item": "hammer"})``."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """One scripted model response: its text, its tool calls, or both."""

    text: str = ""
    calls: Sequence[ToolUse] = ()


#: a case's inline script: replies in order, or replies by node id (``__root__``,
#: ``researcher``) when subagents answer too (as ``offline/script:`` files are)
InlineScript = Sequence[Reply] | Mapping[str, Sequence[Reply]]


@dataclass(frozen=True)
class Approve:
    """Approve every call of ``tool`` that asks a person (``approval=always()`` and kin)."""

    tool: str


@dataclass(frozen=True)
class Deny:
    """Deny every call of ``tool`` that asks a person."""

    tool: str


@dataclass(frozen=True)
class Choose:
    """Answer ``option`` whenever the workflow tool ``tool`` asks a question."""

    tool: str
    option: str


Answer = Approve | Deny | Choose

#: a stub replaces a function tool's execute for one case: it is called with the tool's
#: validated input as keyword arguments, sync or async, and returns the tool's result
Stub = Callable[..., Any]


def _messages(messages: Sequence[str | UserMessage]) -> tuple[str | UserMessage, ...]:
    if not messages:
        raise AuthoringError("a Case needs at least one message to send: Case('name', 'hi')")
    for message in messages:
        if not isinstance(message, str | UserMessage):
            raise AuthoringError(
                f"a Case's messages are strings or eve.messages.user_message(...) values, "
                f"not {type(message).__name__}"
            )
    return tuple(messages)


@dataclass(frozen=True, init=False)
class Case:
    """One conversation to send and what it must show.

    ``Case("buys a hammer", "Buy me a hammer", expect=[...])``; more messages after the first
    are sent as further turns of the same session.
    """

    #: the case's name in results (a string literal: ``eve compile`` lists it)
    name: str
    #: the user's messages, one turn each
    messages: tuple[str | UserMessage, ...]
    expect: tuple[Expectation, ...]
    #: how a person answers approvals and questions in this case
    answers: tuple[Answer, ...]
    #: inline replies of an offline script model (instead of ``model``)
    script: InlineScript | None
    #: the model id the case runs on (instead of the eval's)
    model: str | None
    #: tool name → its stub, for this case only
    stubs: Mapping[str, Stub]
    timeout_seconds: float | None
    #: run the case this many times (``eve eval --repeat`` overrides it)
    repeat: int | None

    def __init__(
        self,
        name: str,
        *messages: str | UserMessage,
        expect: Sequence[Expectation] = (),
        answers: Sequence[Answer] = (),
        script: InlineScript | None = None,
        model: str | None = None,
        stubs: Mapping[str, Stub] | None = None,
        timeout_seconds: float | None = None,
        repeat: int | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise AuthoringError("a Case's first argument is its name, a non-empty string")
        if script is not None and model is not None:
            raise AuthoringError(
                f"case {name!r} gives both script= and model=: the script is the model"
            )
        bad = [e for e in expect if not is_expectation(e)]
        if bad:
            raise AuthoringError(
                f"case {name!r}: {bad[0]!r} is not an expectation (Trajectory, "
                "AnswerContains, MaxSteps, Judge, Check, …)"
            )
        _positive(repeat, "repeat", name)
        _positive(timeout_seconds, "timeout_seconds", name)
        values = {
            "name": name,
            "messages": _messages(messages),
            "expect": tuple(expect),
            "answers": tuple(answers),
            "script": script,
            "model": model,
            "stubs": dict(stubs or {}),
            "timeout_seconds": timeout_seconds,
            "repeat": repeat,
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)


def _positive(value: float | None, what: str, case: str) -> None:
    if value is not None and value <= 0:
        raise AuthoringError(f"case {case!r}: {what} must be more than 0, not {value}")


@dataclass(frozen=True, kw_only=True)
class EvalDefinition:
    """An eval: its cases and what they share. Build it with ``define_eval``."""

    cases: tuple[Case, ...]
    description: str = ""
    #: the model id every case runs on unless it names its own
    model: str | None = None
    #: inline replies every case replays unless it has its own script or model
    script: InlineScript | None = None
    #: stubs every case uses (a case's own stubs win)
    stubs: Mapping[str, Stub] = field(default_factory=dict)
    repeat: int = 1
    #: the share of a case's runs that must pass for the case to pass
    min_pass_rate: float = 1.0
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS


def define_eval(
    *,
    cases: Sequence[Case],
    description: str = "",
    model: str | None = None,
    script: InlineScript | None = None,
    stubs: Mapping[str, Stub] | None = None,
    repeat: int = 1,
    min_pass_rate: float = 1.0,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
) -> EvalDefinition:
    """Define the eval of this file (its name is the file name).

    ``model`` pins the cases to a model id (``offline/script:agent/evals/x.json`` for
    deterministic CI runs, a real model for scheduled ones); ``script`` gives inline replies
    instead. ``repeat`` runs each case several times and ``min_pass_rate`` is the share of
    those runs that must pass.
    """
    if not cases or not all(isinstance(case, Case) for case in cases):
        raise AuthoringError("define_eval(cases=[...]) takes a non-empty list of Case values")
    if script is not None and model is not None:
        raise AuthoringError("define_eval gives both script= and model=: the script is the model")
    if repeat < 1:
        raise AuthoringError(f"define_eval(repeat=...) must be at least 1, not {repeat}")
    if not 0 < min_pass_rate <= 1:
        raise AuthoringError(f"min_pass_rate is a share in (0, 1], not {min_pass_rate}")
    if timeout_seconds <= 0:
        raise AuthoringError(f"timeout_seconds must be more than 0, not {timeout_seconds}")
    names = [case.name for case in cases]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise AuthoringError(f"two cases are named {twice[0]!r}; rename one")
    return EvalDefinition(
        cases=tuple(cases),
        description=description,
        model=model,
        script=script,
        stubs=dict(stubs or {}),
        repeat=repeat,
        min_pass_rate=min_pass_rate,
        timeout_seconds=timeout_seconds,
    )
