"""Measure what tracing costs per agent step: eve's loop with no tracer provider vs with one.

The turn is ``loop_overhead``'s (its eve case, reused as is): 50 steps against an instant
model, 49 calls of a trivial sync tool, then a final text; each step makes one ``chat`` and
one ``execute_tool`` span under the turn's ``invoke_agent``. Three variants, interleaved:

* ``off``: no provider set, so the API's no-op tracer (what eve costs when nobody traces);
* ``on``: the SDK's ``TracerProvider`` with a ``BatchSpanProcessor`` and an exporter that
  drops the batches (the process's share of real tracing; the export runs in its thread);
* ``on+content``: the same with message content recorded
  (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``).

Switching providers in one process resets the API's set-once global, as OpenTelemetry's own
test utilities do. Since ``off`` cannot be told from noise on a loaded machine, the cost of
its no-op path is also timed alone: one step's seams (a ``ModelCallSpan`` seeing two stream
events, a ``ToolCallSpan``, six events observed) with no provider, over many iterations.

Run alone with ``python -m bench.tracing_overhead [--quick]``; results land in
``bench/results/tracing_overhead.{json,md}``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.util._once import Once

from bench._machine import machine_info, package_version
from bench.loop_overhead import RESULTS_DIR, STEPS, Case, _eve_case, _per_step_us, _timed
from eve._usage import TokenUsage
from eve.events import (
    ActionResultData,
    ActionsRequestedData,
    EventMeta,
    MessageAppendedData,
    StepCompletedData,
    StepStartedData,
    event_of,
)
from eve.models.base import ModelRequest
from eve.models.events import Done, ToolCallEnd
from eve.tracing import ModelCallSpan, ToolCallSpan, observe
from eve.tracing.conventions import CAPTURE_CONTENT_ENV

REPEATS, QUICK_REPEATS = 30, 5
NOOP_ITERATIONS, QUICK_NOOP_ITERATIONS = 20_000, 2_000
WARMUP, QUICK_WARMUP = 3, 1
OFF, ON, CONTENT = "off", "on", "on+content"


class DroppingExporter(SpanExporter):
    """Takes every batch and sends it nowhere: the network is not the process's cost."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


@dataclass
class Variant:
    name: str
    case: Case
    provider: TracerProvider | None
    content: bool
    times_ns: list[int] = field(default_factory=list)


def _use(variant: Variant) -> None:
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    if variant.provider is not None:
        trace.set_tracer_provider(variant.provider)
    if variant.content:
        os.environ[CAPTURE_CONTENT_ENV] = "true"
    else:
        os.environ.pop(CAPTURE_CONTENT_ENV, None)


def _variants() -> tuple[list[Variant], DroppingExporter]:
    exporter = DroppingExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    variants = [
        Variant(OFF, _eve_case(), None, content=False),
        Variant(ON, _eve_case(), provider, content=False),
        Variant(CONTENT, _eve_case(), provider, content=True),
    ]
    return variants, exporter


async def _measure(variants: list[Variant], repeats: int, warmup: int) -> None:
    for _ in range(warmup):
        for variant in variants:
            _use(variant)
            await _timed(variant.case)
    for repeat in range(repeats):
        shift = repeat % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            _use(variant)
            variant.times_ns.append(await _timed(variant.case))


def _noop_step_us(iterations: int) -> float:
    """What one step's tracing seams cost with no provider (µs, the best of five rounds)."""
    meta = EventMeta(id="evt_0", at="2026-12-04T10:00:00+00:00", index=0)
    usage = TokenUsage()
    events = [
        event_of(data.__class__(**{**_fields(data), "turn_id": "turn_0"}), meta)
        for data in (
            StepStartedData(),
            MessageAppendedData(message_delta="x"),
            ActionsRequestedData(actions=[]),
            ActionResultData(call_id="c", name="add", status="completed", output="2"),
            StepCompletedData(finish_reason="tool_use", usage=usage),
            StepStartedData(),
        )
    ]
    request = ModelRequest(system="", messages=[])
    call, done = ToolCallEnd(id="c", name="add", input={}), Done(stop_reason="tool_use")

    def one_step() -> None:
        with ModelCallSpan("offline/test", request, step=0) as model:
            model.saw(call)
            model.saw(done)
        with ToolCallSpan("add", "c", {}, session_id="local", step=0) as tool:
            tool.completed("2")
        for event in events:
            observe(event)

    best = float("inf")
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(iterations):
            one_step()
        best = min(best, (time.perf_counter_ns() - start) / iterations / 1000)
    return round(best, 2)


def _fields(data: Any) -> dict[str, Any]:
    return {name: getattr(data, name) for name in data.__struct_fields__}


def _summary(variant: Variant, off: Variant) -> dict[str, float]:
    median, base = statistics.median(variant.times_ns), statistics.median(off.times_ns)
    return {
        "median_us_per_step": round(_per_step_us(median), 2),
        "min_us_per_step": round(_per_step_us(min(variant.times_ns)), 2),
        "added_us_per_step": round(_per_step_us(median - base), 2),
        "ratio_to_off": round(median / base, 3),
    }


def _results(
    variants: list[Variant], exporter: DroppingExporter, repeats: int, noop_us: float
) -> dict[str, Any]:
    off = variants[0]
    return {
        "benchmark": "tracing_overhead",
        "summary": "eve's cost per agent step with tracing off (no provider) and on (SDK, batched)",
        "steps_per_run": STEPS,
        "spans_per_step": 2,
        "repeats": repeats,
        "warmup_runs": WARMUP if repeats == REPEATS else QUICK_WARMUP,
        "variants": {v.name: _summary(v, off) for v in variants},
        "noop_seams_us_per_step": noop_us,
        "spans_exported": exporter.spans,
        "environment": {
            **machine_info(),
            "packages": {n: package_version(n) for n in ("eve", "opentelemetry-sdk")},
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    }


def _table(results: dict[str, Any]) -> str:
    rows = [
        "| tracing | median µs/step | min µs/step | added µs/step | ÷ off |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, s in results["variants"].items():
        rows.append(
            f"| {name} | {s['median_us_per_step']:.1f} | {s['min_us_per_step']:.1f} "
            f"| {s['added_us_per_step']:.1f} | {s['ratio_to_off']:.2f} |"
        )
    return "\n".join(rows)


def _markdown(results: dict[str, Any]) -> str:
    env = results["environment"]
    packages = ", ".join(f"{name} {v}" for name, v in env["packages"].items())
    return (
        "# Tracing overhead per step\n\n"
        f"`loop_overhead`'s eve turn ({results['steps_per_run']} steps, an instant model, a "
        "sync tool; a `chat` and an `execute_tool` span per step) with no tracer provider "
        "(`off`) and with the SDK's, batched to an exporter that drops the spans (`on`; "
        f"`on+content` records message content too); {results['repeats']} interleaved "
        f"repeats after {results['warmup_runs']} warm-up runs.\n\n"
        f"{_table(results)}\n\n"
        f"With no provider, one step's tracing seams cost {results['noop_seams_us_per_step']} µs "
        "(timed alone, best of five rounds).\n\n"
        f"Python {env['python']} on {env['platform']}; {packages}; {env['date']}.\n"
    )


def run(quick: bool = False) -> dict[str, Any]:
    """Run the benchmark, print a table, return the results; write them unless ``quick``."""
    repeats, warmup = (QUICK_REPEATS, QUICK_WARMUP) if quick else (REPEATS, WARMUP)
    variants, exporter = _variants()
    _use(variants[0])
    noop_us = _noop_step_us(QUICK_NOOP_ITERATIONS if quick else NOOP_ITERATIONS)
    gc.collect()
    gc.freeze()
    try:
        asyncio.run(_measure(variants, repeats, warmup))
    finally:
        os.environ.pop(CAPTURE_CONTENT_ENV, None)
        trace._TRACER_PROVIDER_SET_ONCE = Once()
        trace._TRACER_PROVIDER = None
        next(v.provider for v in variants if v.provider is not None).shutdown()
    results = _results(variants, exporter, repeats, noop_us)
    print(_table(results))
    print(f"no provider: {noop_us} µs per step for the tracing seams")
    if not quick:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        (RESULTS_DIR / "tracing_overhead.json").write_text(json.dumps(results, indent=2) + "\n")
        (RESULTS_DIR / "tracing_overhead.md").write_text(_markdown(results))
    return results


main = run


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
