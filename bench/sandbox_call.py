"""What the sandbox adds to a command: one built-in ``bash`` call under ``bubblewrap`` vs the
same call under ``local``, and the bare ``bash -c`` it runs.

Each case calls the tool as the loop does (validated input, ``execute(input, ctx)``) with
the command ``echo ok`` and times it from call to result. ``local`` is what an agent without
``sandbox.py`` gets (the reaper, an allow-listed environment); ``bubblewrap`` adds
``prlimit`` and ``bwrap`` (namespaces, mounts, rlimits; as root, ``setpriv`` to nobody).
The cases alternate call by call, so a busy moment of the machine falls on all of them.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._machine import machine_info
from bench._results import publish
from eve.authoring.context import ToolContext
from eve.builtins import bash
from eve.manifest import ROOT_NODE_ID, SandboxEntry, SandboxLimitsEntry
from eve.sandbox.bindings import bind_sandbox

NAME = "sandbox_call"
CALLS, QUICK_CALLS = 200, 10
WARMUP = 3
COMMAND = "echo ok"
LIMITS = SandboxLimitsEntry(
    cpu_seconds=60,
    memory_mb=1024,
    processes=256,
    file_size_mb=100,
    wall_seconds=600,
    workspace_mb=256,
)


def _context(root: Path, provider: str) -> ToolContext:
    workspace = root / provider
    workspace.mkdir()
    if provider == "bubblewrap":
        entry = SandboxEntry(provider="bubblewrap", limits=LIMITS, logical_path="agent/sandbox.py")
        bind_sandbox(workspace, ROOT_NODE_ID, entry, app_root=root)
    return ToolContext(session_id="bench", call_id="c", tool_name="bash", workspace=workspace)


async def _tool_call(ctx: ToolContext) -> float:
    assert bash.default.input_model is not None and bash.default.execute is not None
    data = bash.default.input_model.model_validate({"command": COMMAND})
    start = time.perf_counter()
    result = await bash.default.execute(data, ctx)
    elapsed = time.perf_counter() - start
    assert result["stdout"] == "ok\n", result
    return elapsed


async def _bare(_: ToolContext) -> float:
    start = time.perf_counter()
    done = await asyncio.create_subprocess_exec("bash", "-c", COMMAND, stdout=subprocess.DEVNULL)
    await done.wait()
    return time.perf_counter() - start


async def _measure(calls: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {"bare bash -c": [], "local": [], "bubblewrap": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        contexts = {"bare bash -c": _context(root, "bare"), "local": _context(root, "local")}
        contexts["bubblewrap"] = _context(root, "bubblewrap")
        for index in range(WARMUP + calls):
            for case, ctx in contexts.items():
                timed = await (_bare(ctx) if case == "bare bash -c" else _tool_call(ctx))
                if index >= WARMUP:
                    timings[case].append(timed)
    return timings


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": 1000 * statistics.median(ordered),
        "p90_ms": 1000 * ordered[int(0.9 * (len(ordered) - 1))],
    }


def _table(report: dict[str, Any]) -> str:
    cases, machine = report["cases"], report["machine"]
    local = cases["local"]["median_ms"]
    rows = [
        f"| {name} | {case['median_ms']:.1f} ms | {case['p90_ms']:.1f} ms | "
        f"{case['median_ms'] / local:.2f}× |"
        for name, case in cases.items()
    ]
    return "\n".join(
        [
            f"# {NAME}",
            "",
            f"One built-in `bash` call (`{COMMAND}`), {report['calls']} calls per case, "
            "call to result; `bare bash -c` is the process alone, without the tool.",
            "",
            "| case | median | p90 | vs local |",
            "|---|---|---|---|",
            *rows,
            "",
            f"bubblewrap − local: {report['overhead_ms']:+.1f} ms per call (median), a ratio "
            f"of {report['ratio']:.2f}. local starts a Python reaper per call (and scans "
            "/proc for orphans when the command ends); bubblewrap's PID namespace does that "
            f"job. Load average during the run: {machine['load_average_1m']:.1f} on "
            f"{machine['cpu_count']} cores.",
            "",
        ]
    )


def run(*, quick: bool = False) -> dict[str, Any]:
    calls = QUICK_CALLS if quick else CALLS
    timings = asyncio.run(_measure(calls))
    cases = {name: _stats(samples) for name, samples in timings.items()}
    sandboxed, local = cases["bubblewrap"]["median_ms"], cases["local"]["median_ms"]
    report = {
        "machine": machine_info(),
        "calls": calls,
        "command": COMMAND,
        "cases": cases,
        "overhead_ms": sandboxed - local,
        "ratio": sandboxed / local,
    }
    publish(NAME, report, _table(report), quick=quick)
    return report
