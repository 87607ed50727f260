"""Costs at the command line: ``eve run --json``'s turn.completed and ``eve dev``'s footer."""

from __future__ import annotations

import json
import re
from decimal import Decimal

from eve._usage import TokenUsage
from eve.cli.console import footer
from eve.costs import Cost, Spend
from eve.events import TurnCompletedData
from tests.cli.test_dev_cli import piped
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory

APP = {
    "agent/agent.py": "from eve import define_agent\ndefault = define_agent(model='offline/test')\n"
}


def test_eve_run_json_carries_the_turns_tokens_and_cost(make_app: AppFactory) -> None:
    root = make_app(APP)
    done = eve_run(root, "--json", "hello")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [completed] = [e["data"] for e in events if e["type"] == "turn.completed"]
    assert completed["usage"]["input_tokens"] > 0
    assert completed["cost"] == {"usd": "0"}  # the offline model: free, and said so
    assert completed["session"] == {"usage": completed["usage"], "cost": {"usd": "0"}}
    [step] = [e["data"] for e in events if e["type"] == "step.completed"]
    assert step["step"] == {"usage": completed["usage"], "cost": {"usd": "0"}}


def test_eve_dev_prints_a_footer_under_each_turn(make_app: AppFactory) -> None:
    root = make_app(APP)
    _, err = piped(root, "hello\nagain\n/exit\n")
    footers = re.findall(r"tokens [\d,]+ in · [\d,]+ out · turn \$0 · session \$0", err)
    assert len(footers) == 2, err


def test_the_footer_names_each_kind_and_an_unknown_price() -> None:
    usage = TokenUsage(
        input_tokens=1200,
        output_tokens=80,
        cache_read_tokens=3000,
        cache_write_tokens=0,
        reasoning_tokens=12,
    )
    data = TurnCompletedData(
        stop_reason="complete",
        usage=usage,
        cost=Cost(usd=Decimal("0.0042")),
        session=Spend(usage=usage, cost=Cost(usd=Decimal("0.0042"), unpriced=["acme/large"])),
    )
    assert footer(data) == (
        "tokens 1,200 in · 3,000 cache read · 80 out (12 reasoning) · turn $0.0042 · "
        "session $0.0042 + price unknown (acme/large)"
    )
