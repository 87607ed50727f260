"""Measure framework overhead per agent step: eve vs pydantic-ai vs the OpenAI Agents SDK.

Each framework runs the same 50-step turn against an instant model: requests 1-49 are
answered with one call of a trivial sync tool ``add(a, b)``, request 50 with a final text.
Because the model and the tool cost next to nothing, wall time / 50 is the framework's own
cost of one step (one model request plus running the tool call it asked for).

Run alone with ``python -m bench.loop_overhead [--quick]``; ``run(quick=...)`` is the entry
point for ``python -m bench``. Results land in ``bench/results/loop_overhead.{json,md}``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._add_tool import FINAL_TEXT, Tally, add_or_finish, add_tool
from bench._machine import machine_info, package_version

STEPS = 50
TOOL_CALLS = STEPS - 1
PROMPT = "go"
SYSTEM = "You add numbers."
REPEATS, QUICK_REPEATS = 30, 5
WARMUP, QUICK_WARMUP = 3, 1
RESULTS_DIR = Path(__file__).parent / "results"
PACKAGES = ("eve", "pydantic-ai-slim", "openai-agents")
EVE, PYDANTIC_AI, OPENAI_AGENTS = "eve", "pydantic-ai", "openai-agents"

#: One 50-step turn; returns the final text so the caller can check the run finished.
RunOnce = Callable[[], Awaitable[str]]


@dataclass
class Case:
    """One framework's 50-step turn, ready to repeat, and its per-run wall times (ns)."""

    name: str
    run_once: RunOnce
    tally: Tally
    times_ns: list[int] = field(default_factory=list)


# --- eve ------------------------------------------------------------------------------------


def _eve_case() -> Case:
    from eve.execution import agent_setup, run_agent
    from eve.messages import AssistantMessage
    from eve.models.base import ModelRequest
    from eve.models.events import ModelEvent
    from eve.models.function import FunctionModel

    tally = Tally()
    resolved = add_tool(tally)

    def respond(request: ModelRequest) -> list[ModelEvent]:
        step = sum(isinstance(m, AssistantMessage) for m in request.messages)
        events: list[ModelEvent] = add_or_finish(step, TOOL_CALLS)
        return events

    async def run_once() -> str:
        setup = agent_setup(
            FunctionModel(respond), instructions=SYSTEM, tools=[resolved], max_turns=STEPS + 10
        )
        result = await run_agent(setup, PROMPT)
        return result.final_text

    return Case(EVE, run_once, tally)


# --- pydantic-ai ----------------------------------------------------------------------------


def _pydantic_ai_case() -> Case:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    tally = Tally()

    # async, because pydantic-ai runs a sync model function in a thread: the model must be
    # instant in every framework, and eve's FunctionModel calls its function inline.
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if step >= TOOL_CALLS:
            return ModelResponse(parts=[TextPart(content=FINAL_TEXT)])
        call = ToolCallPart(tool_name="add", args={"a": step, "b": 1}, tool_call_id=f"call_{step}")
        return ModelResponse(parts=[call])

    agent = Agent(FunctionModel(respond), instructions=SYSTEM)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return tally.add(a, b)

    async def run_once() -> str:
        result = await agent.run(PROMPT)
        return str(result.output)

    return Case(PYDANTIC_AI, run_once, tally)


# --- OpenAI Agents SDK ----------------------------------------------------------------------


def _instant_openai_model() -> Any:
    """An ``agents`` Model that answers at once, deciding the step from the tool outputs so far."""
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    def output_for(step: int) -> Any:
        if step >= TOOL_CALLS:
            text = ResponseOutputText(type="output_text", text=FINAL_TEXT, annotations=[])
            return ResponseOutputMessage(
                id="msg_final", type="message", role="assistant", status="completed", content=[text]
            )
        return ResponseFunctionToolCall(
            type="function_call",
            call_id=f"call_{step}",
            name="add",
            arguments=json.dumps({"a": step, "b": 1}),
        )

    class InstantModel(Model):
        # Only ``input`` matters: the rest of the interface's arguments are passed through.
        async def get_response(  # type: ignore[override]
            self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
        ) -> ModelResponse:
            items = [] if isinstance(input, str) else input
            step = sum(_item_type(item) == "function_call_output" for item in items)
            return ModelResponse(output=[output_for(step)], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark runs non-streamed, like the other two")

    return InstantModel()


def _item_type(item: Any) -> Any:
    return item.get("type") if isinstance(item, dict) else getattr(item, "type", None)


def _openai_agents_case() -> Case:
    from agents import Agent, Runner, function_tool, set_tracing_disabled

    # Tracing exports spans over the network by default; the other two record nothing.
    set_tracing_disabled(True)
    tally = Tally()

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return tally.add(a, b)

    agent = Agent(
        name="adder",
        instructions=SYSTEM,
        tools=[function_tool(add)],
        model=_instant_openai_model(),
    )

    async def run_once() -> str:
        result = await Runner.run(agent, PROMPT, max_turns=STEPS + 10)
        return str(result.final_output)

    return Case(OPENAI_AGENTS, run_once, tally)


# --- timing ---------------------------------------------------------------------------------


async def _timed(case: Case) -> int:
    """Run one turn, check it really made 50 steps, and return its wall time in ns."""
    case.tally.calls = 0
    # Collect now so garbage left by the previous framework is not billed to this one.
    gc.collect()
    start = time.perf_counter_ns()
    final = await case.run_once()
    elapsed = time.perf_counter_ns() - start
    if case.tally.calls != TOOL_CALLS or final != FINAL_TEXT:
        raise AssertionError(
            f"{case.name}: {case.tally.calls} tool calls and final {final!r}; "
            f"expected {TOOL_CALLS} and {FINAL_TEXT!r}"
        )
    return elapsed


async def _measure(cases: list[Case], repeats: int, warmup: int) -> None:
    for _ in range(warmup):
        for case in cases:
            await _timed(case)
    for repeat in range(repeats):
        # Interleave frameworks and rotate who goes first, so machine noise and position
        # effects (caches, frequency scaling) fall on all three alike.
        shift = repeat % len(cases)
        for case in cases[shift:] + cases[:shift]:
            case.times_ns.append(await _timed(case))


def _per_step_us(ns: float) -> float:
    return ns / STEPS / 1000


def _summary(case: Case) -> dict[str, float]:
    return {
        "median_us_per_step": round(_per_step_us(statistics.median(case.times_ns)), 2),
        "min_us_per_step": round(_per_step_us(min(case.times_ns)), 2),
        "median_ms_per_run": round(statistics.median(case.times_ns) / 1e6, 3),
    }


def _ratios(frameworks: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    eve = frameworks[EVE]
    return {
        f"eve/{peer}": {
            stat: round(eve[f"{stat}_us_per_step"] / frameworks[peer][f"{stat}_us_per_step"], 3)
            for stat in ("median", "min")
        }
        for peer in (PYDANTIC_AI, OPENAI_AGENTS)
    }


def _environment() -> dict[str, Any]:
    return {
        **machine_info(),
        "packages": {name: package_version(name) for name in PACKAGES},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _results(cases: list[Case], repeats: int, warmup: int) -> dict[str, Any]:
    frameworks = {case.name: _summary(case) for case in cases}
    ratios = _ratios(frameworks)
    met = all(r["median"] < 1.0 for r in ratios.values())
    return {
        "benchmark": "loop_overhead",
        "summary": "framework overhead per agent step, instant model, 50-step turn, sync tool",
        "steps_per_run": STEPS,
        "tool_calls_per_run": TOOL_CALLS,
        "repeats": repeats,
        "warmup_runs": warmup,
        "frameworks": frameworks,
        "ratios": ratios,
        "target": {
            "goal": "eve has less overhead per step than pydantic-ai and openai-agents (median)",
            "met": met,
        },
        "environment": _environment(),
    }


# --- reporting ------------------------------------------------------------------------------


def _table(results: dict[str, Any]) -> str:
    rows = [
        "| framework | median µs/step | min µs/step | eve ÷ this (median) |",
        "|---|---:|---:|---:|",
    ]
    for name, stats in results["frameworks"].items():
        ratio = "1.000" if name == EVE else f"{results['ratios'][f'eve/{name}']['median']:.3f}"
        rows.append(
            f"| {name} | {stats['median_us_per_step']:.1f} | {stats['min_us_per_step']:.1f} "
            f"| {ratio} |"
        )
    return "\n".join(rows)


def _markdown(results: dict[str, Any]) -> str:
    env = results["environment"]
    packages = ", ".join(f"{name} {v}" for name, v in env["packages"].items())
    verdict = "met" if results["target"]["met"] else "NOT met"
    return (
        "# Loop overhead per step\n\n"
        f"Instant model, {results['steps_per_run']}-step turn ({results['tool_calls_per_run']} "
        f"calls of a sync `add` tool, then a final text); {results['repeats']} interleaved "
        f"repeats after {results['warmup_runs']} warm-up runs. Ratio below 1.0 = eve has less "
        "overhead.\n\n"
        f"{_table(results)}\n\n"
        f"Target (eve below both, median): **{verdict}**.\n\n"
        f"Python {env['python']} on {env['platform']}; {packages}; {env['date']}.\n"
    )


def _write(results: dict[str, Any]) -> None:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "loop_overhead.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS_DIR / "loop_overhead.md").write_text(_markdown(results))


def run(quick: bool = False) -> dict[str, Any]:
    """Run the benchmark, print a table, return the results; write them unless ``quick``.

    A quick run is a smoke test (few repeats), so it does not overwrite the committed figures.
    """
    repeats, warmup = (QUICK_REPEATS, QUICK_WARMUP) if quick else (REPEATS, WARMUP)
    cases = [_eve_case(), _pydantic_ai_case(), _openai_agents_case()]
    # All three frameworks share one process; freezing their import-time objects keeps a
    # collection during one framework's run from scanning the other two's modules.
    gc.collect()
    gc.freeze()
    asyncio.run(_measure(cases, repeats, warmup))
    results = _results(cases, repeats, warmup)
    print(_table(results))
    print(f"target (eve below both): {'met' if results['target']['met'] else 'NOT met'}")
    if not quick:
        _write(results)
    return results


#: ``bench/__init__.py`` names benchmarks ``module:main``; both names work.
main = run


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
