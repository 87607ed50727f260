"""eve's benchmarks: each one measures a cost and writes its figures under ``bench/results/``.

Register a benchmark in ``BENCHMARKS`` below; ``python -m bench`` runs them in that order.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Benchmark:
    """A named benchmark: ``target`` is ``"module:function"``, called as ``function(quick=...)``.

    The function prints its table, writes ``bench/results/<name>.{json,md}`` unless ``quick``
    (a smoke run must not overwrite the committed figures) and returns the results.

    The target is a string, imported only when the benchmark runs, so a benchmark that needs
    heavy optional packages costs nothing when another one is selected with ``--only``.
    """

    name: str
    target: str
    summary: str


BENCHMARKS: list[Benchmark] = [
    Benchmark(
        name="compile",
        target="bench.compile_bench:run",
        summary="compile, --check and resolve over 10/100/1,000 tools vs bare imports",
    ),
    Benchmark(
        name="loop_overhead",
        target="bench.loop_overhead:run",
        summary="framework cost per agent step: eve vs pydantic-ai vs openai-agents",
    ),
    Benchmark(
        name="tracing_overhead",
        target="bench.tracing_overhead:run",
        summary="eve's cost per agent step with OpenTelemetry tracing off vs on (SDK, batched)",
    ),
    Benchmark(
        name="startup",
        target="bench.startup:run",
        summary="whole-process start: --help, compile --check, run; vs pydantic-ai, openai-agents",
    ),
    Benchmark(
        name="durability",
        target="bench.durability:run",
        summary="durable step cost (SQLite, PostgreSQL) vs in-memory; sessions/s at 1/10/50",
    ),
    Benchmark(
        name="cost",
        target="bench.cost:run",
        summary="billed input tokens of a 10/50-step Anthropic tool loop, prompt caching on vs off",
    ),
    Benchmark(
        name="mcp_call",
        target="bench.mcp_call:run",
        summary="one MCP tool call through eve vs the mcp client directly (stdio)",
    ),
    Benchmark(
        name="compaction",
        target="bench.compaction:run",
        summary="a 200-turn offline session: context under the threshold, time per turn flat",
    ),
    Benchmark(
        name="storage_growth",
        target="bench.storage_growth:run",
        summary="bytes a session adds per turn at turn 10/100/1,000, SQLite and PostgreSQL",
    ),
    Benchmark(
        name="channel_latency",
        target="bench.channel_latency:run",
        summary="each channel's first byte and per-event gap over the native stream",
    ),
    Benchmark(
        name="channel_reads",
        target="bench.channel_reads:run",
        summary="log events each channel reads for one turn at 10 and 200 turns of history",
    ),
    Benchmark(
        name="auth_check",
        target="bench.auth_check:run",
        summary="the auth check per request: none, shared token, JWT, agent/auth.py hook",
    ),
    Benchmark(
        name="scale",
        target="bench.scale:run",
        summary="eve serve under 100/500/1,000 closed-loop clients: turns/s, CPU per turn, hosts",
    ),
    Benchmark(
        name="ui",
        target="bench.ui:run",
        summary="the dev UI in headless chromium: page weight and first render",
    ),
    Benchmark(
        name="memory_search",
        target="bench.memory_search:run",
        summary="memory search: recall@k on a labelled set, query time at 10k and 100k entries",
    ),
    Benchmark(
        name="idle_cpu",
        target="bench.idle_cpu:run",
        summary="CPU of an idle eve serve, with no follower and with 100 followers",
    ),
    Benchmark(
        name="sandbox_call",
        target="bench.sandbox_call:run",
        summary="one bash call under bubblewrap vs local vs bare bash -c: median, ratio",
    ),
]

__all__ = ["BENCHMARKS", "Benchmark"]
