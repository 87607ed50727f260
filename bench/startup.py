"""Time whole processes from start to exit: eve's fast paths beside its peers' cold start.

Every figure is the wall time of a fresh interpreter, started with ``subprocess`` and timed
with ``time.perf_counter`` from spawn to exit, so it includes Python's own start-up and every
import, as a user at a terminal or a CI job pays them. Commands:

* ``help``: ``eve --help``, the floor: Python, click and eve's command table;
* ``check_1000``: ``eve compile --check`` on fresh artifacts of the generated 1,000-tool agent
  of ``bench/compile_bench.py`` (it imports no pydantic, no jsonschema, no authored code);
* ``run``: ``eve run "add 1 and 2"`` on fresh artifacts of a one-tool agent with the
  ``offline/test`` model, to its printed answer (two model requests, one tool call);
* ``example_first_event``: ``eve run hello`` on the example agent (``eve init --example``,
  fresh artifacts, ``offline/test``), from spawn to the first line it prints (its first
  event); ``example`` is the same run to exit, which starts the example's MCP server when
  the offline model searches the catalog;
* ``pydantic_ai``, ``openai_agents``: the same one-tool agent and turn, written for
  pydantic-ai (its ``TestModel``) and the OpenAI Agents SDK (a canned ``Model``), run as
  scripts (``bench/_startup_*.py``) to their printed answer.

Repeats are interleaved across commands with a rotating start; bytecode caches are warm (a
warm-up round runs first). Targets: ``check_1000`` within 1.5x of ``help``, ``run`` at
most 0.4 s and ``example_first_event`` at most 0.5 s (medians). Run alone with
``python -m bench.startup [--quick]``; ``run(quick=...)`` is the entry point for
``python -m bench``. Results land in ``bench/results/startup.{json,md}``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._machine import machine_info, package_version
from bench.compile_bench import generate_agent, git_commit

BENCH_DIR = Path(__file__).parent
RESULTS_DIR = BENCH_DIR / "results"
REPEATS, QUICK_REPEATS = 20, 3
WARMUP, QUICK_WARMUP = 2, 1
CHECK_TOOLS = 1000
CHECK_RATIO_LIMIT = 1.5
RUN_LIMIT_S = 0.4
FIRST_EVENT_LIMIT_S = 0.5
PACKAGES = ("eve", "pydantic-ai-slim", "openai-agents")
PROMPT = "add 1 and 2"

ONE_TOOL_AGENT = {
    "agent/agent.py": """
        from eve import define_agent

        default = define_agent(model="offline/test")
    """,
    "agent/instructions.md": "You add numbers.\n",
    "agent/tools/add.py": """
        from eve.tools import tool


        @tool
        def add(a: int, b: int) -> int:
            '''Add two numbers.'''
            return a + b
    """,
}


@dataclass
class Command:
    """One process to start, where, and what its output must hold for a run to count."""

    name: str
    argv: list[str]
    cwd: Path
    expect: str
    #: timed to the first line it prints (stdout and stderr together), not to its exit
    first_line: bool = False
    times_s: list[float] = field(default_factory=list)


def eve_argv(*args: str) -> list[str]:
    """The ``eve`` console script beside this interpreter, as a user runs it."""
    script = Path(sys.executable).with_name("eve")
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "eve", *args]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    # Each process must find the bytecode the warm-up wrote; no provider key may change the
    # model eve picks; the Agents SDK must not try to export traces.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        env.pop(key, None)
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    return env


def timed(command: Command, env: dict[str, str]) -> float:
    start = time.perf_counter()
    process = subprocess.Popen(
        command.argv,
        cwd=command.cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if command.first_line else subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline() if command.first_line else ""
    first_s = time.perf_counter() - start
    out, err = process.communicate()
    elapsed = time.perf_counter() - start
    out = first + out
    if process.returncode != 0 or command.expect not in out:
        raise RuntimeError(
            f"{command.name}: exit {process.returncode}, expected {command.expect!r} in its "
            f"output\nstdout: {out}\nstderr: {err}"
        )
    return first_s if command.first_line else elapsed


def write_agent(app_root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = app_root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return app_root


def compile_app(app_root: Path, env: dict[str, str]) -> None:
    subprocess.run(eve_argv("compile"), cwd=app_root, env=env, check=True, capture_output=True)


def commands(workdir: Path, env: dict[str, str]) -> list[Command]:
    big = workdir / "agent_1000"
    generate_agent(big, CHECK_TOOLS)
    one = write_agent(workdir / "agent_1", ONE_TOOL_AGENT)
    example = workdir / "example"
    subprocess.run(eve_argv("init", str(example), "--example"), env=env, check=True)
    for app_root in (big, one, example):
        compile_app(app_root, env)
    python = sys.executable
    hello = eve_argv("run", "--model", "offline/test", "hello")
    return [
        Command("help", eve_argv("--help"), workdir, "Commands"),
        Command("check_1000", eve_argv("compile", "--check"), big, "artifacts are fresh"),
        Command("run", eve_argv("run", PROMPT), one, "I called 1 tool(s)"),
        Command("example_first_event", hello, example, "→ ", first_line=True),
        Command("example", hello, example, "- eve__search"),
        Command(
            "pydantic_ai", [python, str(BENCH_DIR / "_startup_pydantic_ai.py")], workdir, "add"
        ),
        Command(
            "openai_agents", [python, str(BENCH_DIR / "_startup_openai_agents.py")], workdir, "3"
        ),
    ]


def measure(cases: list[Command], repeats: int, warmup: int, env: dict[str, str]) -> None:
    for _ in range(warmup):
        for case in cases:
            timed(case, env)
    for repeat in range(repeats):
        # Rotate who goes first, so machine noise and position effects fall on all alike.
        shift = repeat % len(cases)
        for case in cases[shift:] + cases[:shift]:
            case.times_s.append(timed(case, env))


def summarize(cases: list[Command]) -> dict[str, Any]:
    stats = {
        c.name: {"median_s": statistics.median(c.times_s), "min_s": min(c.times_s)} for c in cases
    }
    median = {name: s["median_s"] for name, s in stats.items()}
    ratios = {
        "check_1000/help": median["check_1000"] / median["help"],
        "run/help": median["run"] / median["help"],
        "run/pydantic_ai": median["run"] / median["pydantic_ai"],
        "run/openai_agents": median["run"] / median["openai_agents"],
    }
    targets = [
        {
            "name": "check_1000_vs_help",
            "description": "`eve compile --check` on 1,000 tools / `eve --help`, medians",
            "value": ratios["check_1000/help"],
            "limit": CHECK_RATIO_LIMIT,
            "met": ratios["check_1000/help"] <= CHECK_RATIO_LIMIT,
        },
        {
            "name": "run_first_result",
            "description": "`eve run` on fresh artifacts to its answer, median seconds",
            "value": median["run"],
            "limit": RUN_LIMIT_S,
            "met": median["run"] <= RUN_LIMIT_S,
        },
        {
            "name": "example_first_event",
            "description": "`eve run` on the example agent to its first printed event, "
            "median seconds",
            "value": median["example_first_event"],
            "limit": FIRST_EVENT_LIMIT_S,
            "met": median["example_first_event"] <= FIRST_EVENT_LIMIT_S,
        },
    ]
    return {"commands": stats, "ratios": ratios, "targets": targets}


def render_table(results: dict[str, Any]) -> str:
    lines = ["| command | median ms | min ms | ÷ help |", "|---|---:|---:|---:|"]
    help_s = results["commands"]["help"]["median_s"]
    for name, stat in results["commands"].items():
        lines.append(
            f"| {name} | {stat['median_s'] * 1000:.1f} | {stat['min_s'] * 1000:.1f} "
            f"| {stat['median_s'] / help_s:.2f}× |"
        )
    ratios = results["ratios"]
    lines.append("")
    lines.append(
        f"eve run ÷ pydantic-ai: {ratios['run/pydantic_ai']:.2f}; "
        f"eve run ÷ OpenAI Agents SDK: {ratios['run/openai_agents']:.2f} (medians; below 1 = "
        "eve starts faster)"
    )
    return "\n".join(lines)


def render_targets(targets: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"- {'PASS' if t['met'] else 'MISS'} {t['name']}: {t['value']:.3f} (target ≤ "
        f"{t['limit']}) - {t['description']}"
        for t in targets
    )


def render_markdown(report: dict[str, Any]) -> str:
    machine = report["machine"]
    load = machine["load_average_1m"]
    load_text = "" if load is None else f", 1-minute load {load:.2f} with the benchmark running"
    packages = ", ".join(f"{name} {v}" for name, v in report["packages"].items())
    return (
        "# Start-up benchmark\n\n"
        f"Measured {report['date']} on Python {machine['python']}, {machine['platform']}, "
        f"{machine['cpu_count']} CPUs{load_text}; {packages}; "
        "`python -m bench --only startup`.\n\n"
        "Whole processes, spawn to exit, in milliseconds: medians over "
        f"{report['repeats']} interleaved repeats after {report['warmup']} warm-up round(s) "
        "(warm bytecode caches); the minimum is beside it. `check_1000` is `eve compile "
        "--check` on a fresh 1,000-tool agent; `run`, `pydantic_ai` and `openai_agents` run "
        "the same one-tool agent (one `add` call, then text) with an offline model to its "
        "printed answer. `example_first_event` is `eve run` on the example agent "
        "(`eve init --example`, offline model) to the first line it prints; `example` the "
        "same run to its exit (the offline model calls every tool, so it searches the "
        "catalog and the example's MCP server starts then).\n\n"
        f"{render_table(report['results'])}\n\n## Targets\n\n"
        f"{render_targets(report['results']['targets'])}\n"
    )


def write_results(report: dict[str, Any]) -> None:
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "startup.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS_DIR / "startup.md").write_text(render_markdown(report))


def run(quick: bool = False) -> dict[str, Any]:
    """Time every command, print the table and targets, and (unless quick) save them."""
    repeats, warmup = (QUICK_REPEATS, QUICK_WARMUP) if quick else (REPEATS, WARMUP)
    env = child_env()
    workdir = Path(tempfile.mkdtemp(prefix="eve-bench-startup-"))
    try:
        cases = commands(workdir, env)
        measure(cases, repeats, warmup, env)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report: dict[str, Any] = {
        "benchmark": "startup",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "quick": quick,
        "repeats": repeats,
        "warmup": warmup,
        "machine": machine_info(),
        "packages": {name: package_version(name) for name in PACKAGES},
        "method": {
            "timer": "time.perf_counter around subprocess.run: spawn to exit",
            "statistic": "median and min over interleaved repeats",
            "bytecode_cache": "warm (warm-up rounds precede timing)",
        },
        "results": summarize(cases),
    }
    print(render_table(report["results"]), render_targets(report["results"]["targets"]), sep="\n\n")
    if quick:
        print("(--quick: results not written)")
    else:
        write_results(report)
        print(f"wrote {RESULTS_DIR / 'startup.json'} and startup.md")
    return report


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
