"""A 200-turn session on the offline model: does compaction keep the context and the time per
turn flat?

Each turn sends a 400-character message to an agent of one tool on ``offline/test`` (which
calls the tool, then answers), carrying the whole history from turn to turn, as a session
does. Its window is eve's table's (16,000 tokens) and ``compaction.threshold_percent`` is 80,
so compaction starts after some dozens of turns. The same session runs without
``compaction`` for comparison. Recorded per turn: the wall time and the largest context a
request of the turn carried (eve's estimate, ``execution.compaction.context_tokens``).

The time per turn is fitted with a least-squares line over the turns after compaction
started: the slope (µs per turn, per turn) and how much it adds over those turns, as a share
of the median turn. Targets: every request after compaction starts is under the threshold,
and the fitted growth over the run is under 25% of the median turn.

Run alone with ``python -m bench.compaction [--quick]``; results land in
``bench/results/compaction.{json,md}``.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench._machine import machine_info, package_version
from bench._results import publish

TURNS, QUICK_TURNS = 200, 100
MESSAGE_CHARS = 400
THRESHOLD_PERCENT = 80
#: the fitted growth over the compacted turns may be at most this share of the median turn
GROWTH_TARGET = 0.25


@dataclass
class Session:
    name: str
    turn_ns: list[int] = field(default_factory=list)
    #: the largest context (estimated tokens) a request of each turn carried
    context: list[int] = field(default_factory=list)
    #: the turns that compacted
    compacted: list[int] = field(default_factory=list)
    threshold: int | None = None


async def _session(turns: int, *, compact: bool) -> Session:
    from eve._model_windows import known_window
    from eve.compiler.normalize import tool_entry
    from eve.events import SessionCompacted, SessionEvent
    from eve.execution import TurnEnvironment, agent_setup, run_agent
    from eve.execution.compaction import context_tokens
    from eve.manifest import Compaction
    from eve.messages import Message
    from eve.models.base import ModelRequest
    from eve.models.function import FunctionModel
    from eve.models.offline import OfflineTestModel
    from eve.runtime.resolve_tool import bind_tool
    from eve.tools import define_tool

    offline = OfflineTestModel()
    largest = [0]

    def measured(request: ModelRequest) -> Any:
        if request.purpose == "turn":
            largest[0] = max(largest[0], context_tokens(request.system, request.messages))
        return offline.stream(request)

    definition = define_tool(
        description="Look an order up.",
        input_schema=None,
        execute=lambda data, ctx: "order 1042: 3 items, shipped, tracking ZX" + "9" * 120,
    )
    where = {"logical_path": "agent/tools/lookup.py", "source_id": "tools/lookup.py"}
    entry = tool_entry(definition, name="lookup", export_name="default", factory=False, **where)
    lookup = bind_tool(entry, definition)
    setup = agent_setup(
        FunctionModel(measured, model_id="offline/test"),
        instructions="You help with orders.",
        tools=[lookup],
        compaction=Compaction(threshold_percent=THRESHOLD_PERCENT) if compact else None,
    )
    window = known_window("offline/test")
    assert window is not None
    session = Session(name="compaction" if compact else "none")
    session.threshold = window.tokens * THRESHOLD_PERCENT // 100
    history: list[Message] = []
    for turn in range(turns):
        events: list[SessionEvent] = []
        largest[0] = 0
        env = TurnEnvironment(on_event=events.append, turn_id=f"turn_{turn}")
        text = f"turn {turn}: " + ("where is my order " * 30)[:MESSAGE_CHARS]
        started = time.perf_counter_ns()
        result = await run_agent(setup, text, history=history, env=env)
        session.turn_ns.append(time.perf_counter_ns() - started)
        assert result.stop_reason == "complete", result.stop_reason
        history = result.messages
        session.context.append(largest[0])
        if any(isinstance(e, SessionCompacted) for e in events):
            session.compacted.append(turn)
    return session


def _fit(values_ns: list[int]) -> tuple[float, float]:
    """Least-squares slope (µs per turn, per turn) and intercept (µs)."""
    xs = list(range(len(values_ns)))
    slope, intercept = statistics.linear_regression(xs, [v / 1000 for v in values_ns])
    return slope, intercept


def _summary(session: Session) -> dict[str, Any]:
    start = session.compacted[0] if session.compacted else 0
    after = session.turn_ns[start:]
    slope, intercept = _fit(after)
    median_us = statistics.median(after) / 1000
    growth = slope * len(after) / median_us if median_us else 0.0
    under = [c for c in session.context[start:] if session.threshold and c >= session.threshold]
    return {
        "name": session.name,
        "turns": len(session.turn_ns),
        "first_compaction_turn": session.compacted[0] if session.compacted else None,
        "compactions": len(session.compacted),
        "threshold_tokens": session.threshold,
        "max_context_tokens_after_start": max(session.context[start:]),
        "max_context_tokens": max(session.context),
        "last_context_tokens": session.context[-1],
        "requests_at_or_over_threshold_after_start": len(under),
        "fitted_from_turn": start,
        "slope_us_per_turn": round(slope, 3),
        "intercept_us": round(intercept, 1),
        "median_turn_us": round(median_us, 1),
        "growth_over_run_share": round(growth, 4),
        "first_10_median_us": round(statistics.median(after[:10]) / 1000, 1),
        "last_10_median_us": round(statistics.median(after[-10:]) / 1000, 1),
        "context_tokens": session.context,
        "turn_us": [round(t / 1000, 1) for t in session.turn_ns],
    }


def _markdown(results: dict[str, Any]) -> str:
    rows = results["sessions"]
    lines = [
        "# Compaction: a 200-turn session on the offline model",
        "",
        f"{results['turns']} turns on `offline/test` (window 16,000 tokens, threshold "
        f"{THRESHOLD_PERCENT}%: {rows[0]['threshold_tokens']:,} tokens), one tool call a turn, "
        "the whole history carried between turns. Time per turn fitted with a least-squares "
        "line from the first compaction on (from turn 0 without compaction).",
        "",
        "| session | first compaction | compactions | max context after it | last context | "
        "slope µs/turn² | median turn µs | fitted growth ÷ median | first 10 / last 10 µs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        first = r["first_compaction_turn"]
        lines.append(
            f"| {r['name']} | {'—' if first is None else first} | {r['compactions']} | "
            f"{r['max_context_tokens_after_start']:,} | {r['last_context_tokens']:,} | "
            f"{r['slope_us_per_turn']} | {r['median_turn_us']:,} | "
            f"{r['growth_over_run_share']:.3f} | {r['first_10_median_us']:,} / "
            f"{r['last_10_median_us']:,} |"
        )
    lines += [
        "",
        f"Targets (with compaction: no request at or over the threshold after the first "
        f"compaction; fitted growth under {GROWTH_TARGET:.0%} of the median turn): "
        f"**{'met' if results['met'] else 'not met'}**.",
        "",
        f"eve {results['eve']}; {results['date']}; load {results['machine']['load_average_1m']}.",
        "",
    ]
    return "\n".join(lines)


def run(*, quick: bool = False) -> dict[str, Any]:
    turns = QUICK_TURNS if quick else TURNS
    sessions = []
    for compact in (True, False):
        gc.collect()
        sessions.append(_summary(asyncio.run(_session(turns, compact=compact))))
    compacted = sessions[0]
    met = (
        compacted["compactions"] > 0
        and compacted["requests_at_or_over_threshold_after_start"] == 0
        and abs(compacted["growth_over_run_share"]) < GROWTH_TARGET
    )
    results = {
        "benchmark": "compaction",
        "turns": turns,
        "eve": package_version("eve"),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "met": met,
        "sessions": sessions,
    }
    publish("compaction", results, _markdown(results), quick=quick)
    return results


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
