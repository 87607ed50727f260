"""The cost of one MCP tool call through eve beside a direct call with the ``mcp`` client.

Both sides call ``convert_units`` of the example agent's server (``examples/units_server.py``,
over stdio, one server process each), alternating blocks of calls so drift hits both alike.
*Direct* is ``ClientSession.call_tool`` on an open session. *Through eve* is what a turn does
for a model's call of ``units__convert_units``: look the tool up, validate the input against
the server's JSON Schema, check approval, call through the connection pool, and build the
result message (``ToolRunner.admit`` then ``run_admitted``). The difference is eve's own cost.

Run alone with ``python -m bench.mcp_call [--quick]``. Results land in
``bench/results/mcp_call.{json,md}``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._machine import machine_info, package_version

REPO = Path(__file__).resolve().parent.parent
SERVER = REPO / "examples" / "units_server.py"
ARGS = {"value": 2.0, "from_unit": "ft", "to_unit": "cm"}
BLOCKS, QUICK_BLOCKS = 20, 3
PER_BLOCK = 25
RESULTS_DIR = Path(__file__).parent / "results"


async def _measure(blocks: int) -> dict[str, list[float]]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from eve._cancellation import CancelSignal
    from eve.compiler.connections import connection_entry
    from eve.connections import define_mcp_connection
    from eve.connections.pool import ConnectionPool, current_pool
    from eve.execution.events import EventEmitter
    from eve.execution.tool_calls import Admitted, ToolRunner
    from eve.execution.tool_output import DEFAULT_CHARS
    from eve.messages import ToolCall
    from eve.runtime.connections import connection_tools, list_connections
    from eve.runtime.resolved import ResolvedConnection

    definition = define_mcp_connection(description="Units.", command=[sys.executable, str(SERVER)])
    entry = connection_entry(
        definition,
        name="units",
        logical_path="agent/connections/units.py",
        source_id="connections/units.py",
        export_name="default",
        factory=False,
    )
    connection = ResolvedConnection(entry=entry, definition=definition)
    # eve's tools call through the running loop's pool, as they do in a turn
    pool: ConnectionPool = current_pool()
    tools = connection_tools([connection], await list_connections([connection]))
    runner = ToolRunner(
        tools={t.name: t for t in tools},
        approve=None,
        emitter=EventEmitter(None, session_id="bench"),
        signal=CancelSignal(),
        session_id="bench",
        node_id="__root__",
        workspace=REPO,
        output_limit=DEFAULT_CHARS,
    )
    call = ToolCall(id="c0", name="units__convert_units", input=ARGS)
    timings: dict[str, list[float]] = {"direct": [], "eve": [], "direct_cpu": [], "eve_cpu": []}
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    try:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            for _ in range(blocks):
                for _ in range(PER_BLOCK):
                    start, cpu = time.perf_counter_ns(), time.process_time_ns()
                    result = await session.call_tool("convert_units", ARGS)
                    timings["direct_cpu"].append((time.process_time_ns() - cpu) / 1000)
                    timings["direct"].append((time.perf_counter_ns() - start) / 1000)
                    assert not result.is_error
                for _ in range(PER_BLOCK):
                    start, cpu = time.perf_counter_ns(), time.process_time_ns()
                    admitted = await runner.admit(call, frozenset())
                    assert isinstance(admitted, Admitted)
                    outcome = await runner.run_admitted(admitted, 0)
                    timings["eve_cpu"].append((time.process_time_ns() - cpu) / 1000)
                    timings["eve"].append((time.perf_counter_ns() - start) / 1000)
                    assert outcome.status == "completed", outcome.result.content
    finally:
        await pool.close()
    return timings


def _render(report: dict[str, Any]) -> str:
    direct, eve = report["median_us"]["direct"], report["median_us"]["eve"]
    return (
        "# MCP tool call: through eve vs the mcp client directly\n\n"
        f"`convert_units` of `examples/units_server.py` over stdio; {report['calls']} calls "
        f"each side, in alternating blocks of {PER_BLOCK}, after a warm-up listing.\n\n"
        "| path | median µs/call | p90 µs/call |\n|---|---:|---:|\n"
        f"| direct (`ClientSession.call_tool`) | {direct:.1f} | "
        f"{report['p90_us']['direct']:.1f} |\n"
        f"| through eve (validate, approve, pool, result) | {eve:.1f} | "
        f"{report['p90_us']['eve']:.1f} |\n\n"
        f"eve ÷ direct (median): **{report['ratio']:.3f}**; eve's own cost per call: "
        f"{eve - direct:.1f} µs.\n\n"
        f"The client process's CPU time per call (mean; it counts no waiting, so a loaded "
        f"machine moves it far less than the wall time): direct {report['cpu_us']['direct']:.1f} "
        f"µs, through eve {report['cpu_us']['eve']:.1f} µs, eve's own "
        f"{report['cpu_us']['eve'] - report['cpu_us']['direct']:.1f} µs.\n\n"
        f"Python {report['machine']['python']} on {report['machine']['platform']}; "
        f"eve {report['versions']['eve']}, mcp {report['versions']['mcp']}; {report['at']}.\n"
    )


def run(*, quick: bool = False) -> dict[str, Any]:
    timings = asyncio.run(_measure(QUICK_BLOCKS if quick else BLOCKS))
    sides = ("direct", "eve")
    median = {k: statistics.median(timings[k]) for k in sides}
    p90 = {k: statistics.quantiles(timings[k], n=10)[-1] for k in sides}
    # the mean: each sample is the whole process's CPU time (every thread) during one call,
    # noisy one by one, and their sum is what the calls cost
    cpu = {k: statistics.fmean(timings[f"{k}_cpu"]) for k in sides}
    report = {
        "calls": len(timings["eve"]),
        "median_us": median,
        "p90_us": p90,
        "cpu_us": cpu,
        "ratio": median["eve"] / median["direct"],
        "machine": machine_info(),
        "versions": {"eve": package_version("eve"), "mcp": package_version("mcp")},
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    text = _render(report)
    print(text)
    if not quick:
        RESULTS_DIR.mkdir(exist_ok=True)
        (RESULTS_DIR / "mcp_call.json").write_text(json.dumps(report, indent=2) + "\n")
        (RESULTS_DIR / "mcp_call.md").write_text(text)
    return report


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
