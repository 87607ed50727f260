"""Session limits where no one can raise them: a bare ``run_agent`` raises
``SessionLimitReached``; with a ``LimitHook``, ``raise`` goes on and ``end`` stops the turn."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from pathlib import Path

import msgspec
import pytest

from eve._usage import TokenUsage
from eve.costs import Spend
from eve.errors import SessionLimitReached
from eve.events import SessionEvent, TurnFailed
from eve.execution import TurnEnvironment, agent_setup, run_agent
from eve.execution.limits import LimitCrossed, LimitDecision
from eve.execution.setup import AgentSetup
from eve.manifest import Limits
from eve.models.events import Done, TextDelta
from eve.models.function import FunctionModel
from eve.tools import tool
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory
from tests.execution.helpers import Script, calls, live, text

SONNET = "anthropic/claude-sonnet-4-5"


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def limited(script: Script, limits: Limits, model_id: str = "offline/function") -> AgentSetup:
    setup = agent_setup(FunctionModel(script, model_id=model_id), tools=[live("ping", ping)])
    config = msgspec.structs.replace(setup.agent.config, limits=limits)
    return dataclasses.replace(setup, agent=dataclasses.replace(setup.agent, config=config))


async def test_a_bare_run_agent_raises_the_named_error_with_the_totals() -> None:
    script = Script(calls(("ping", {})), text("never", TokenUsage(input_tokens=1)))
    setup = limited(script, Limits(max_input_tokens_per_session=10))
    events: list[SessionEvent] = []
    with pytest.raises(SessionLimitReached) as raised:
        await run_agent(setup, "go", env=TurnEnvironment(on_event=events.append))
    error = raised.value
    assert (error.limit, error.used, error.allowed) == ("max_input_tokens_per_session", 10, 10)
    assert "no one is here to raise it" in str(error)
    assert script.count == 1  # stopped after the step that crossed it
    [failed] = [e for e in events if isinstance(e, TurnFailed)]
    assert failed.data.error.startswith("SessionLimitReached: the session reached")


async def test_what_the_session_spent_before_counts_toward_the_limit() -> None:
    setup = limited(
        Script(text("hi", TokenUsage(output_tokens=1))), Limits(max_output_tokens_per_session=5)
    )
    before = Spend(usage=TokenUsage(output_tokens=4))
    with pytest.raises(SessionLimitReached) as raised:
        await run_agent(setup, "go", env=TurnEnvironment(spent_before=before))
    assert (raised.value.used, raised.value.allowed) == (5, 5)
    # below the limit, the same turn runs
    fresh = limited(
        Script(text("hi", TokenUsage(output_tokens=1))), Limits(max_output_tokens_per_session=5)
    )
    assert (await run_agent(fresh, "go")).stop_reason == "complete"


async def test_the_cost_limit_counts_a_priced_models_cost() -> None:
    usage = TokenUsage(input_tokens=1000, output_tokens=100)  # $0.003 + $0.0015
    script = Script([TextDelta(text="hi"), Done(stop_reason="end_turn", usage=usage)])
    setup = limited(script, Limits(max_cost_usd_per_session=0.001), model_id=SONNET)
    with pytest.raises(SessionLimitReached) as raised:
        await run_agent(setup, "go")
    assert raised.value.limit == "max_cost_usd_per_session"
    assert (raised.value.used, raised.value.allowed) == (Decimal("0.0045"), Decimal("0.001"))


async def test_a_hook_raises_until_the_turn_fits_then_ends_on_the_next_crossing() -> None:
    step = TokenUsage(output_tokens=4)
    script = Script(
        [*calls(("ping", {}))[:-1], Done(stop_reason="tool_use", usage=step)],
        [*calls(("ping", {}))[:-1], Done(stop_reason="tool_use", usage=step)],
        text("never", step),
    )
    asked: list[LimitCrossed] = []

    async def ask(crossing: LimitCrossed) -> LimitDecision:
        asked.append(crossing)
        return "raise" if len(asked) == 1 else "end"

    raised: dict[str, int] = {}
    setup = limited(script, Limits(max_output_tokens_per_session=4))
    result = await run_agent(setup, "go", env=TurnEnvironment(ask_limit=ask, raised_limits=raised))
    assert [(c.step, c.used, c.allowed, c.times_raised) for c in asked] == [
        (0, 4, 4, 0),
        (1, 8, 8, 1),
    ]
    assert result.stop_reason == "session_limit"
    assert result.ended_by == "max_output_tokens_per_session"
    # the turn's final state holds the raises (the session's checkpoint keeps them)
    assert result.state is not None
    assert result.state.raised_limits == {"max_output_tokens_per_session": 1}
    assert script.count == 2
    assert result.session.usage.output_tokens == 8


def test_eve_run_exits_3_with_the_named_error(make_app: AppFactory) -> None:
    root: Path = make_app(
        {
            "agent/agent.py": """
                from eve import define_agent
                default = define_agent(
                    model="offline/script:script.json",
                    limits={"max_output_tokens_per_session": 2},
                )
            """,
            "agent/instructions.md": "Follow the script.\n",
        },
        minimal=False,
    )
    (root / "script.json").write_text(json.dumps([{"text": "a reply of some length"}]))
    done = eve_run(root, "go")
    assert done.returncode == 3, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("eve: the session reached max_output_tokens_per_session: 6 used of 2")
