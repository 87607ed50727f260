"""Time compile, ``--check`` and resolve over generated agents, each beside a bare import.

For N = 10, 100 and 1,000 tools this generates an agent in a temporary directory and measures,
in-process with ``time.perf_counter``, the median and min over several repeats of:

* ``import``: importing the agent's modules with plain ``importlib`` (what Python does without
  eve: the floor any compile or resolve that imports authored code has to pay);
* ``compile``: ``compile_agent`` in memory (discovery, import analysis, imports, manifest);
* ``check``: ``check_artifacts`` after ``compile_to_disk`` (rehashing; imports nothing);
* ``resolve``: ``load_compiled_agent`` + ``resolve_agent`` with the modules purged first.

Bytecode caches are warmed before timing, for the baseline and eve alike, so every figure is
the warm-cache cost of executing modules, not of compiling source to bytecode.

Run alone with ``python -m bench.compile_bench [--quick]``; ``run(quick=...)`` is the entry
point for ``python -m bench``. Results land in ``bench/results/compile.{json,md}``.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._machine import machine_info
from eve._version import __version__
from eve.artifacts import check_artifacts
from eve.compiler import compile_agent, compile_to_disk
from eve.compiler.cache import CompileCache
from eve.manifest import ROOT_NODE_ID
from eve.runtime import load_compiled_agent, resolve_agent

SIZES = (10, 100, 1000)
#: repeats per size; fewer for big agents, whose runs are longer and less noisy
REPEATS = {10: 15, 100: 9, 1000: 5}
QUICK_REPEATS = {10: 3, 100: 3, 1000: 2}
METRICS = ("import", "compile", "compile_cold", "check", "resolve")
CHECK_LIMIT_S = 0.2
COMPILE_RATIO_LIMIT = 2.0
RESULTS_DIR = Path(__file__).parent / "results"

# ---------------------------------------------------------------------------------------------
# Generated agents


AGENT_PY = '''"""Generated benchmark agent."""

from eve import define_agent

default = define_agent(model="offline/test")
'''

HELPERS_PY = '''"""Shared helpers for the generated tools."""

from typing import Literal

Units = Literal["metric", "imperial"]


def normalize_city(city: str) -> str:
    return city.strip().title()
'''

DEFINE_TOOL = '''"""Generated tool {i}: define_tool with a pydantic input model."""

from pydantic import BaseModel, Field

from eve.tools import define_tool


class Input(BaseModel):
    city: str
    days: int = {days}
    knob_{i}: float = Field(default={i}.0, description="Knob {i}.")


def run(data, ctx):
    return {{"city": data.city, "days": data.days, "tool": {i}}}


default = define_tool(description="Tool number {i}.", input_schema=Input, execute=run)
'''

DECORATOR_TOOL = '''"""Generated tool {i}: the decorator form, whose signature is the schema."""

from eve.tools import tool


@tool
def {name}(city: str, days: int = {days}) -> dict:
    """Tool number {i}."""
    return {{"city": city, "days": days, "tool": {i}}}
'''

HELPER_TOOL = '''"""Generated tool {i}: define_tool using shared code from agent/lib/."""

from pydantic import BaseModel

from agent.lib.helpers import Units, normalize_city
from eve.tools import define_tool


class Input(BaseModel):
    city: str
    units: Units = "metric"


def run(data, ctx):
    return {{"city": normalize_city(data.city), "units": data.units, "tool": {i}}}


default = define_tool(description="Tool number {i}.", input_schema=Input, execute=run)
'''


def tool_source(i: int) -> str:
    """Tool ``i``'s source: 7 in 10 define_tool, 2 in 10 decorator, 1 in 10 uses agent/lib."""
    kind = i % 10
    fields = {"i": i, "name": tool_name(i), "days": i % 7 + 1}
    if kind in (7, 8):
        return DECORATOR_TOOL.format(**fields)
    if kind == 9:
        return HELPER_TOOL.format(**fields)
    return DEFINE_TOOL.format(**fields)


def tool_name(i: int) -> str:
    return f"tool_{i:04d}"


def generate_agent(app_root: Path, n_tools: int) -> list[str]:
    """Write an agent with ``n_tools`` tools under ``app_root``; return its module ids."""
    agent = app_root / "agent"
    (agent / "tools").mkdir(parents=True)
    (agent / "lib").mkdir()
    # A regular package, so the baseline's plain import finds this agent/ and no other.
    (agent / "__init__.py").write_text('"""Generated benchmark agent."""\n')
    (agent / "agent.py").write_text(AGENT_PY)
    (agent / "instructions.md").write_text("You are a benchmark agent. Use the tools.\n")
    (agent / "lib" / "__init__.py").write_text("")
    (agent / "lib" / "helpers.py").write_text(HELPERS_PY)
    for i in range(n_tools):
        (agent / "tools" / f"{tool_name(i)}.py").write_text(tool_source(i))
    # The modules compile imports itself; agent/lib comes in through the tools, as it does there.
    return ["agent.agent", *(f"agent.tools.{tool_name(i)}" for i in range(n_tools))]


# ---------------------------------------------------------------------------------------------
# The four measurements


def purge_authored_modules(app_root: Path) -> None:
    """Forget every ``agent*`` module and point ``sys.path`` at this app, as a fresh run would."""
    for name in [n for n in sys.modules if n == "agent" or n.startswith("agent.")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    root = str(app_root)
    while root in sys.path:
        sys.path.remove(root)
    sys.path.insert(0, root)


def bare_import(module_ids: list[str]) -> None:
    for module_id in module_ids:
        importlib.import_module(module_id)


def full_compile(app_root: Path, n_tools: int, *, cached: bool = True) -> None:
    # The warm compile reads .eve/cache/ as the bare import reads __pycache__; the cold one
    # redoes every scan and schema, the cost after every source changed.
    result = compile_agent(app_root, cache=CompileCache.load(app_root) if cached else None)
    if result.manifest is None:
        raise RuntimeError(f"benchmark agent failed to compile: {result.diagnostics.items}")
    assert len(result.manifest.nodes[ROOT_NODE_ID].tools) == n_tools


def check(app_root: Path) -> None:
    report = check_artifacts(app_root)
    if not report.fresh:
        raise RuntimeError(f"artifacts should be fresh right after compile: {report}")


def resolve(app_root: Path, n_tools: int) -> None:
    compiled = load_compiled_agent(app_root)
    resolved = asyncio.run(resolve_agent(compiled.manifest, compiled.module_map))
    assert len(resolved.tools) == n_tools


def timed(action: Callable[[], object]) -> float:
    # Collect first so one run's garbage is not collected on the next run's clock.
    gc.collect()
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def measure_once(app_root: Path, module_ids: list[str]) -> dict[str, float]:
    """One repeat of all four measurements; eve's own calls purge modules themselves."""
    n_tools = len(module_ids) - 1
    purge_authored_modules(app_root)
    seconds = {"import": timed(lambda: bare_import(module_ids))}
    seconds["compile"] = timed(lambda: full_compile(app_root, n_tools))
    seconds["compile_cold"] = timed(lambda: full_compile(app_root, n_tools, cached=False))
    seconds["check"] = timed(lambda: check(app_root))
    purge_authored_modules(app_root)
    seconds["resolve"] = timed(lambda: resolve(app_root, n_tools))
    return seconds


def warm_up(app_root: Path, module_ids: list[str]) -> None:
    """Write every ``__pycache__`` entry and the ``.eve/`` artifacts before anything is timed."""
    purge_authored_modules(app_root)
    bare_import(module_ids)
    compile_to_disk(app_root)
    purge_authored_modules(app_root)
    resolve(app_root, len(module_ids) - 1)


def bench_size(n_tools: int, repeats: int, workdir: Path) -> dict[str, Any]:
    app_root = (workdir / f"agent_{n_tools}").resolve()
    module_ids = generate_agent(app_root, n_tools)
    warm_up(app_root, module_ids)
    runs = [measure_once(app_root, module_ids) for _ in range(repeats)]
    return summarize(n_tools, runs)


def summarize(n_tools: int, runs: list[dict[str, float]]) -> dict[str, Any]:
    stats = {
        metric: {
            "median_s": statistics.median(run[metric] for run in runs),
            "min_s": min(run[metric] for run in runs),
        }
        for metric in METRICS
    }
    base = stats["import"]["median_s"]
    ratios = {
        f"{m}/import": stats[m]["median_s"] / base
        for m in ("compile", "compile_cold", "check", "resolve")
    }
    return {"tools": n_tools, "repeats": len(runs), **stats, "ratios": ratios}


# ---------------------------------------------------------------------------------------------
# Targets and reports


def evaluate_targets(by_size: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    big = by_size[max(by_size)]
    check_s = big["check"]["median_s"]
    ratio = big["ratios"]["compile/import"]
    return [
        {
            "name": "check_1000",
            "description": "`--check` on 1,000 tools, median in-process seconds",
            "value": check_s,
            "limit": CHECK_LIMIT_S,
            "met": check_s < CHECK_LIMIT_S,
        },
        {
            "name": "compile_1000_vs_import",
            "description": "full compile of 1,000 tools / bare import of the same modules",
            "value": ratio,
            "limit": COMPILE_RATIO_LIMIT,
            "met": ratio <= COMPILE_RATIO_LIMIT,
        },
    ]


def git_commit() -> str | None:
    # Read-only; the working tree may hold uncommitted edits, so this is only a hint.
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def render_table(by_size: dict[int, dict[str, Any]]) -> str:
    header = (
        "| tools | import ms (min) | compile ms (min) | compile/import "
        "| cold compile ms (min) | cold/import "
        "| check ms (min) | resolve ms (min) | resolve/import |"
    )
    lines = [header, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n_tools, row in by_size.items():
        cells = [str(n_tools)]
        for metric in METRICS:
            stat = row[metric]
            cells.append(f"{_ms(stat['median_s'])} ({_ms(stat['min_s'])})")
            if metric in ("compile", "compile_cold", "resolve"):
                cells.append(f"{row['ratios'][f'{metric}/import']:.2f}×")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_targets(targets: list[dict[str, Any]]) -> str:
    lines = []
    for target in targets:
        verdict = "PASS" if target["met"] else "MISS"
        op = "<" if target["name"] == "check_1000" else "≤"
        lines.append(
            f"- {verdict} {target['name']}: {target['value']:.3f} (target {op} "
            f"{target['limit']}) - {target['description']}"
        )
    return "\n".join(lines)


def render_markdown(report: dict[str, Any], table: str, targets: str) -> str:
    machine = report["machine"]
    load = machine["load_average_1m"]
    load_text = "" if load is None else f", 1-minute load {load:.2f} with the benchmark running"
    return (
        "# Compile benchmark\n\n"
        f"Measured {report['date']} with eve {report['eve_version']} on Python "
        f"{machine['python']}, {machine['platform']}, {machine['cpu_count']} CPUs{load_text}; "
        "`python -m bench --only compile`.\n\n"
        "Medians over the repeats, in milliseconds of in-process wall time; the minimum is in "
        "brackets. Bytecode caches are warm for both the bare import and eve.\n\n"
        f"{table}\n\n## Targets\n\n{targets}\n"
    )


def write_results(report: dict[str, Any], markdown: str) -> None:
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "compile.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS_DIR / "compile.md").write_text(markdown)


def run(quick: bool = False) -> dict[str, Any]:
    """Run every size, print the table and target verdicts, and (unless quick) save them."""
    repeats = QUICK_REPEATS if quick else REPEATS
    by_size: dict[int, dict[str, Any]] = {}
    # PYTHONDONTWRITEBYTECODE (common in containers and CI) would make every import recompile
    # source, so the figures would measure the bytecode compiler; the generated agents live in
    # a temporary directory, so writing their caches there is harmless.
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        with tempfile.TemporaryDirectory(prefix="eve-bench-") as workdir:
            for n_tools in SIZES:
                print(f"  {n_tools} tools x {repeats[n_tools]} repeats ...", flush=True)
                by_size[n_tools] = bench_size(n_tools, repeats[n_tools], Path(workdir))
    finally:
        sys.dont_write_bytecode = writes_bytecode
    targets = evaluate_targets(by_size)
    report: dict[str, Any] = {
        "benchmark": "compile",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "eve_version": __version__,
        "git_commit": git_commit(),
        "quick": quick,
        "machine": machine_info(),
        "method": {
            "timer": "time.perf_counter, in-process wall time",
            "statistic": "median and min over repeats",
            "bytecode_cache": "warm (a warm-up run precedes timing)",
            "gc": "collected before each timed call, enabled during it",
        },
        "results": {str(n): row for n, row in by_size.items()},
        "targets": targets,
    }
    table, verdicts = render_table(by_size), render_targets(targets)
    print(table, verdicts, sep="\n\n")
    if quick:
        print("(--quick: results not written)")
    else:
        write_results(report, render_markdown(report, table, verdicts))
        print(f"wrote {RESULTS_DIR / 'compile.json'} and compile.md")
    return report


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
