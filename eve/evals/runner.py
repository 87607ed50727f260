"""Running cases: each one a real session in this process — the loop, tasks and hooks of
``eve run`` — with its own model, stubs and answers, then its checks.

Why in process rather than durable: an eval checks what the agent does, not whether a
session survives a crash (the session tests do), so each case runs where ``eve run`` runs:
``run_agent`` with ``InlineTasks`` (subagents and workflow tools) and the agent's hooks, no
database, cases side by side in one event loop.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from eve.cancellation import CancelSignal
from eve.context.active import EveContext
from eve.costs import Spend
from eve.errors import EveError
from eve.evals.case_run import CaseRun
from eve.evals.case_setup import (
    CaseAnswers,
    model_client,
    script_model,
    with_client,
    with_stubs,
)
from eve.evals.definition import Case, EvalDefinition
from eve.evals.expectations import CheckOutcome, Expectation, Judge, check, finished, label
from eve.evals.judge import check_judge
from eve.events import SessionEvent
from eve.execution.environment import TurnEnvironment
from eve.execution.inline_tasks import InlineTasks
from eve.execution.loop import run_agent
from eve.execution.result import RunResult
from eve.execution.setup import AgentSetup
from eve.messages import Message
from eve.runtime.connections import close_pool


@dataclass(frozen=True, kw_only=True)
class LoadedEval:
    """An eval file, imported: its name (the file name), path and definition."""

    name: str
    path: str
    definition: EvalDefinition


@dataclass(frozen=True, kw_only=True)
class RunOutcome:
    """One run of one case and its checks' verdicts, ``finished`` first."""

    eval_name: str
    case: str
    attempt: int
    run: CaseRun
    checks: list[CheckOutcome]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def first_failure(self) -> CheckOutcome | None:
        return next((c for c in self.checks if not c.passed), None)


def _case_setup(
    setup: AgentSetup, loaded: LoadedEval, case: Case, model_override: str | None
) -> tuple[AgentSetup, str]:
    definition = loaded.definition
    label = f"{loaded.name}/{case.name}"
    if model_override is not None:
        client = model_client(model_override, setup.app_root)
    elif case.script is not None:
        client = script_model(case.script, label=label)
    elif case.model is not None:
        client = model_client(case.model, setup.app_root)
    elif definition.script is not None:
        client = script_model(definition.script, label=label)
    elif definition.model is not None:
        client = model_client(definition.model, setup.app_root)
    else:
        client = setup.client
    chosen = with_client(setup, client) if client is not setup.client else setup
    stubs = {**definition.stubs, **case.stubs}
    return with_stubs(chosen, stubs), client.model_id


@dataclass(kw_only=True)
class _Conversation:
    setup: AgentSetup
    case: Case
    answers: CaseAnswers
    signal: CancelSignal = field(default_factory=CancelSignal)
    events: list[SessionEvent] = field(default_factory=list)
    results: list[RunResult] = field(default_factory=list)

    async def run(self) -> None:
        session_id = f"eval_{uuid.uuid4().hex[:12]}"
        context = EveContext(session_id=session_id)
        approved_once: frozenset[str] = frozenset()
        history: list[Message] = []
        spent = Spend()
        tasks = InlineTasks(setup=self.setup, approve=self.answers.approve, ask=self.answers.ask)
        for index, message in enumerate(self.case.messages):
            env = TurnEnvironment(
                session_id=session_id,
                turn_id=f"turn_{index}",
                signal=self.signal,
                on_event=self.events.append,
                context=context,
                tasks=tasks,
                approve=self.answers.approve,
                approved_once=approved_once,
                spent_before=spent,
            )
            result = await run_agent(self.setup, message, history=history, env=env)
            self.results.append(result)
            history, spent = result.messages, result.session
            if result.state is not None:
                approved_once = result.state.approved_once
            if result.stop_reason != "complete":
                return


async def run_case(
    setup: AgentSetup,
    loaded: LoadedEval,
    case: Case,
    *,
    attempt: int = 1,
    model_override: str | None = None,
) -> RunOutcome:
    """Run ``case`` once as a session of its own, then check what it expects."""
    case_setup, model_id = _case_setup(setup, loaded, case, model_override)
    conversation = _Conversation(
        setup=case_setup, case=case, answers=CaseAnswers(answers=case.answers)
    )
    timeout = case.timeout_seconds or loaded.definition.timeout_seconds
    started = time.perf_counter()
    error: str | None = None
    try:
        await asyncio.wait_for(conversation.run(), timeout)
    except TimeoutError:
        conversation.signal.cancel("timeout")
        error = f"timed out after {timeout:g}s"
    except Exception as failure:
        # a turn that raised (an exhausted script, a model error, a crashing hook) fails the
        # case with its name; the evals go on
        error = f"{type(failure).__name__}: {failure}"
    run = CaseRun(
        events=tuple(conversation.events),
        results=tuple(conversation.results),
        error=error,
        unanswered=tuple(conversation.answers.unanswered),
        model=model_id,
        seconds=time.perf_counter() - started,
    )
    checks = [finished(run)]
    for expectation in case.expect:
        checks.append(await _checked(expectation, run, setup.app_root))
    return RunOutcome(
        eval_name=loaded.name, case=case.name, attempt=attempt, run=run, checks=checks
    )


async def _checked(wanted: Expectation, run: CaseRun, app_root: Path) -> CheckOutcome:
    try:
        if isinstance(wanted, Judge):
            return await check_judge(wanted, run, app_root=app_root)
        return check(wanted, run)
    except EveError as error:
        return CheckOutcome(
            name=label(wanted), passed=False, seen=f"{type(error).__name__}: {error}"
        )
    except Exception as error:
        seen = f"the check raised {type(error).__name__}: {error}"
        return CheckOutcome(name=label(wanted), passed=False, seen=seen)


@dataclass(frozen=True, kw_only=True)
class EvalOptions:
    """What ``eve eval`` was asked: a model for every case, a repeat count, how many at once."""

    model: str | None = None
    repeat: int | None = None
    concurrency: int = 4


def repeats(loaded: LoadedEval, case: Case, options: EvalOptions) -> int:
    return options.repeat or case.repeat or loaded.definition.repeat


async def run_evals(
    setup: AgentSetup,
    evals: list[LoadedEval],
    options: EvalOptions,
    *,
    on_done: Callable[[RunOutcome], None] | None = None,
) -> list[RunOutcome]:
    """Every case of ``evals``, each as many times as it repeats, ``concurrency`` at once;
    the outcomes in eval, case and attempt order."""
    gate = asyncio.Semaphore(options.concurrency)

    async def one(loaded: LoadedEval, case: Case, attempt: int) -> RunOutcome:
        async with gate:
            outcome = await run_case(
                setup, loaded, case, attempt=attempt, model_override=options.model
            )
        if on_done is not None:
            on_done(outcome)
        return outcome

    jobs = [
        one(loaded, case, attempt)
        for loaded in evals
        for case in loaded.definition.cases
        for attempt in range(1, repeats(loaded, case, options) + 1)
    ]
    try:
        return list(await asyncio.gather(*jobs))
    finally:
        # the MCP servers the cases started (one per server, shared by the cases) end here
        await close_pool()
