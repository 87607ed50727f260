"""Measure the cost of durability: a durable agent step beside the in-memory loop.

Per-step overhead: turns of 1 and of 20 agent steps (each step one model response asking
for one call of a trivial sync tool, then a final text), run by the in-memory ``run_agent``
and by the durable session service on SQLite and on PostgreSQL. Per step is the slope
between the two lengths, so what a turn pays once (creating the session, queue pickup,
loading and saving the checkpoint) is not charged to its steps. Throughput: closed-loop
clients at 1, 10 and 50 concurrent sessions, each session one short turn.

Every configuration runs in its own interpreter (``bench/_durability_worker.py``): DBOS is
a process-wide singleton. PostgreSQL is a throwaway server this benchmark starts
(``tests/postgres.py``, the test suite's) and skips, saying why, when it cannot. Run alone with
``python -m bench.durability [--quick]``; results land in
``bench/results/durability.{json,md}``.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._machine import machine_info, package_version
from tests.postgres import PostgresServer, PostgresUnavailable, find_bindir

LONG, SHORT = 20, 1
RESULTS_DIR = Path(__file__).parent / "results"
REPO = Path(__file__).parent.parent
PACKAGES = ("eve", "dbos", "SQLAlchemy", "psycopg")
TARGET_MS = 5.0
#: the seams that run inside each durable step; the rest poll or run once a turn
STEP_SEAMS = ("dbos.check_operation_execution", "dbos.record_operation_result", "eve.append_events")


class Plan:
    def __init__(self, quick: bool) -> None:
        self.repeats = 3 if quick else 10
        #: the in-memory turn takes milliseconds: many more repeats cost next to nothing
        self.memory_repeats = 10 if quick else 60
        self.warmup = 1 if quick else 2
        self.levels = [(1, 3), (10, 10), (50, 50)] if quick else [(1, 15), (10, 40), (50, 80)]
        self.lag_sessions = 2 if quick else 6
        self.alone_repeats = 3 if quick else 8
        self.profile_turns = 1 if quick else 3
        #: what-ifs: every variant (and a baseline) once per round, rounds interleaved, so
        #: drift in machine load between separate processes hits all variants alike
        self.what_if_rounds = 1 if quick else 2
        self.what_if_repeats = 2 if quick else 3
        self.what_if_lag_sessions = 1 if quick else 2


#: measured on SQLite only, per-step phase only: settings eve could change, as evidence
WHAT_IFS: dict[str, tuple[str, list[str]]] = {
    "baseline": ("as eve runs it (same rounds and repeats as the variants)", []),
    "queue_polling_0.5s": (
        "turn queue polled every 0.5 s instead of 0.05 s",
        ["--queue-polling", "0.5"],
    ),
    "sqlite_synchronous_full": (
        "`EVE_SQLITE_SYNCHRONOUS=FULL`: both SQLite files synced at every commit",
        ["--sqlite-synchronous", "FULL"],
    ),
}


# --- a throwaway PostgreSQL ---------------------------------------------------------


def _start_postgres() -> PostgresServer | str:
    """The test suite's throwaway server (``tests/postgres.py``) with PostgreSQL's own
    durability settings (fsync and synchronous_commit on), or why there is none."""
    bindir = find_bindir()
    if bindir is None:
        return "no PostgreSQL server binaries (initdb, postgres) found"
    try:
        return PostgresServer.start(bindir, durable=True)
    except (PostgresUnavailable, OSError, subprocess.SubprocessError) as error:
        return f"could not start PostgreSQL: {error}"


# --- running workers --------------------------------------------------------------------


def _worker(config: str, database_url: str | None, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("EVE_DATABASE_URL", "EVE_WORKER_ID")}
    if database_url is not None:
        env["EVE_DATABASE_URL"] = database_url
    with tempfile.TemporaryDirectory(prefix="eve-bench-out-") as tmp:
        out = Path(tmp) / "result.json"
        command = [
            sys.executable,
            "-m",
            "bench._durability_worker",
            "--config",
            config,
            "--out",
            str(out),
            *args,
        ]
        started = time.perf_counter()
        done = subprocess.run(
            command, check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=900
        )
        if done.returncode != 0:
            raise RuntimeError(f"worker {config} {' '.join(args)} failed:\n{done.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(out.read_text())
        result["worker_seconds"] = round(time.perf_counter() - started, 1)
        return result


def _merge(into: dict[str, Any], part: dict[str, Any]) -> None:
    """Pool one worker's per-step samples and seam totals into ``into``."""
    turns = into.setdefault("turns", {})
    seams = into.setdefault("seams", {})
    for steps, samples in part["turns"].items():
        turns.setdefault(steps, []).extend(samples)
    for steps, methods in part["seams"].items():
        pooled = seams.setdefault(steps, {})
        for method, (calls, seconds) in methods.items():
            entry = pooled.setdefault(method, [0, 0.0])
            entry[0] += calls
            entry[1] += seconds
    into.setdefault("stream_lag", []).extend(part.get("stream_lag", []))
    into["worker_seconds"] = into.get("worker_seconds", 0) + part["worker_seconds"]


def _progress(text: str) -> None:
    print(f"  .. {text}", flush=True)


# --- statistics -------------------------------------------------------------------------


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _per_step(raw: dict[str, Any]) -> dict[str, Any]:
    """Per-step cost: the slope between the median long and short turn (workflow body)."""
    turns = raw["turns"]
    short, long_ = turns[str(SHORT)], turns[str(LONG)]

    def median(samples: list[dict[str, float]], key: str) -> float:
        return statistics.median(s[key] for s in samples)

    slope = (median(long_, "body") - median(short, "body")) / (LONG - SHORT)
    pairs = [(b["body"] - a["body"]) / (LONG - SHORT) for a, b in zip(short, long_, strict=False)]
    summary: dict[str, Any] = {
        "per_step_ms": _ms(slope),
        "per_step_ms_p25_p75_of_pairs": [_ms(_pct(pairs, 0.25)), _ms(_pct(pairs, 0.75))],
        "turn_ms": {
            str(n): {key: _ms(median(samples, key)) for key in samples[0]}
            for n, samples in ((SHORT, short), (LONG, long_))
        },
        "repeats": len(short),
    }
    if "total" in short[0]:
        total_slope = (median(long_, "total") - median(short, "total")) / (LONG - SHORT)
        summary["per_step_ms_from_total"] = _ms(total_slope)
        summary["fixed_turn_ms"] = _ms(median(short, "total") - SHORT * slope)
    return summary


def _seams(raw: dict[str, Any], limit: int = 10) -> list[dict[str, Any]]:
    """Database time per agent step by method, from the slope between long and short turns."""
    if "seams" not in raw:
        return []
    short, long_ = raw["seams"][str(SHORT)], raw["seams"][str(LONG)]
    n_short, n_long = len(raw["turns"][str(SHORT)]), len(raw["turns"][str(LONG)])
    rows = []
    for key in set(short) | set(long_):
        calls_s, secs_s = short.get(key, [0, 0.0])
        calls_l, secs_l = long_.get(key, [0, 0.0])
        per_step = (secs_l / n_long - secs_s / n_short) / (LONG - SHORT)
        calls = (calls_l / n_long - calls_s / n_short) / (LONG - SHORT)
        rows.append(
            {
                "method": key,
                "where": "in every step" if key in STEP_SEAMS else "poller / once a turn",
                "calls_per_step": round(calls, 2),
                "ms_per_step": _ms(per_step),
                "ms_per_call": _ms(secs_l / calls_l) if calls_l else None,
            }
        )
    rows.sort(key=lambda r: -r["ms_per_step"])
    return rows[:limit]


def _throughput(raw: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "concurrency": level["concurrency"],
            "sessions": level["sessions"],
            "wall_s": round(level["wall_seconds"], 3),
            "sessions_per_second": round(level["sessions"] / level["wall_seconds"], 2),
            "latency_p50_ms": _ms(_pct(level["latencies"], 0.5)),
            "latency_p95_ms": _ms(_pct(level["latencies"], 0.95)),
            "pickup_p50_ms": _ms(_pct(level["pickups"], 0.5)),
        }
        for level in raw["throughput"]
    ]


#: functions where a thread waits for work rather than doing it, left out of self time
_IDLE = ("select.epoll", "'acquire' of '_thread.", "time.sleep", "'get' of '_queue.SimpleQueue'")


def _profile(raw: dict[str, Any], limit: int = 12) -> dict[str, Any]:
    """cProfile rows per agent step: (long turns - short turns) / turns / (LONG - SHORT)."""
    turns = raw["turns"]
    scale = 1000 / turns / (LONG - SHORT)
    short = {r["function"]: r for r in raw[f"rows_{SHORT}"]}
    long_ = {r["function"]: r for r in raw[f"rows_{LONG}"]}

    def per_step(name: str, key: str) -> float:
        return float((long_[name][key] - short.get(name, {}).get(key, 0.0)) * scale)

    busy = [n for n in long_ if not any(idle in n for idle in _IDLE)]
    self_rows = sorted(busy, key=lambda n: -per_step(n, "tottime_s"))[:limit]
    ours = [n for n in long_ if n.startswith(("dbos/", "eve/"))]
    cumulative = sorted(ours, key=lambda n: -per_step(n, "cumtime_s"))[:limit]
    wall = (raw[f"wall_seconds_{LONG}"] - raw[f"wall_seconds_{SHORT}"]) * scale
    return {
        "profiled_ms_per_step": round(wall, 2),
        "busy_self_ms_per_step": round(sum(per_step(n, "tottime_s") for n in busy), 2),
        "self_time": [
            {"function": n, "ms_per_step": round(per_step(n, "tottime_s"), 3)} for n in self_rows
        ],
        "cumulative_eve_dbos": [
            {"function": n, "ms_per_step": round(per_step(n, "cumtime_s"), 3)} for n in cumulative
        ],
    }


def _lag(raw: dict[str, Any]) -> dict[str, float] | None:
    lags = raw.get("stream_lag") or []
    if not lags:
        return None
    return {"p50_ms": _ms(_pct(lags, 0.5)), "max_ms": _ms(max(lags)), "sessions": len(lags)}


# --- the run ----------------------------------------------------------------------------


def _measure(plan: Plan) -> dict[str, Any]:
    common = ["--repeats", str(plan.repeats), "--warmup", str(plan.warmup)]
    levels = ",".join(f"{c}:{n}" for c, n in plan.levels)
    durable = [*common, "--levels", levels, "--lag-sessions", str(plan.lag_sessions)]
    alone = ["--repeats", str(plan.alone_repeats), "--warmup", str(plan.warmup)]
    raw: dict[str, Any] = {"load_before": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}
    cpu_before = _cpu_times()
    started = time.perf_counter()
    _progress("in-memory run_agent")
    raw["in_memory"] = _worker(
        "memory", None, "--repeats", str(plan.memory_repeats), "--warmup", str(plan.warmup)
    )
    _progress("durable on SQLite")
    raw["sqlite"] = _worker("durable", None, *durable)
    raw["sqlite_dbos_alone"] = _worker("dbos-alone", None, *alone)
    _progress("cProfile of durable turns on SQLite (all threads)")
    raw["sqlite_profile"] = _worker("profile", None, "--profile-turns", str(plan.profile_turns))
    for round_ in range(plan.what_if_rounds):
        _progress(f"what-ifs on SQLite, round {round_ + 1} of {plan.what_if_rounds}")
        for name, (_, flags) in WHAT_IFS.items():
            part = _worker(
                "durable",
                None,
                "--repeats",
                str(plan.what_if_repeats),
                "--warmup",
                "1",
                "--lag-sessions",
                str(plan.what_if_lag_sessions),
                *flags,
            )
            _merge(raw.setdefault(f"what_if_{name}", {}), part)
    _progress("starting a throwaway PostgreSQL")
    server = _start_postgres()
    if isinstance(server, str):
        raw["postgres_skipped"] = server
        _progress(f"PostgreSQL skipped: {server}")
    else:
        try:
            raw["postgres_version"] = server.version
            _progress("durable on PostgreSQL")
            raw["postgres"] = _worker("durable", server.database("eve_bench"), *durable)
            raw["postgres_dbos_alone"] = _worker(
                "dbos-alone", server.database("eve_bench_dbos_alone"), *alone
            )
        finally:
            server.stop()
    raw["seconds"] = time.perf_counter() - started
    raw["cpu_steal_percent"] = _steal_percent(cpu_before, _cpu_times())
    return raw


def _cpu_times() -> list[int] | None:
    """The machine's CPU time counters (Linux ``/proc/stat``), to tell steal from load."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    return [int(value) for value in first[1:9]] if first[0] == "cpu" else None


def _steal_percent(before: list[int] | None, after: list[int] | None) -> float | None:
    """Share of CPU time the hypervisor gave to other guests during the run."""
    if before is None or after is None:
        return None
    delta = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(delta)
    return round(100 * delta[7] / total, 1) if total else None


def _results(raw: dict[str, Any], plan: Plan) -> dict[str, Any]:
    memory = _per_step(raw["in_memory"])
    base = memory["per_step_ms"]
    per_step: dict[str, Any] = {"in_memory": memory}
    throughput: dict[str, Any] = {}
    breakdown: dict[str, Any] = {}
    stream_lag: dict[str, Any] = {}
    for db in ("sqlite", "postgres"):
        if db not in raw:
            per_step[db] = {"skipped": raw.get("postgres_skipped", "not run")}
            continue
        summary = _per_step(raw[db])
        alone = _per_step(raw[f"{db}_dbos_alone"])["per_step_ms"]
        summary["added_ms_per_step"] = round(summary["per_step_ms"] - base, 3)
        summary["ratio_to_in_memory"] = round(summary["per_step_ms"] / base, 1)
        summary["dbos_alone_ms_per_step"] = alone
        summary["eve_over_dbos_ms_per_step"] = round(summary["per_step_ms"] - alone, 3)
        per_step[db] = summary
        throughput[db] = _throughput(raw[db])
        breakdown[db] = _seams(raw[db])
        stream_lag[db] = _lag(raw[db])
    what_if = {}
    for name, (description, flags) in WHAT_IFS.items():
        summary = _per_step(raw[f"what_if_{name}"])
        what_if[name] = {
            "description": description,
            "worker_flags": flags,
            "per_step_ms": summary["per_step_ms"],
            "pickup_ms": summary["turn_ms"][str(SHORT)]["pickup"],
            "repeats": summary["repeats"],
            "rounds": plan.what_if_rounds,
            "stream_lag": _lag(raw[f"what_if_{name}"]),
            "seams": _seams(raw[f"what_if_{name}"], limit=5),
        }
    added = per_step["sqlite"]["added_ms_per_step"]
    return {
        "benchmark": "durability",
        "summary": "cost of a durable agent step (SQLite, PostgreSQL) beside the in-memory "
        "loop, and sessions per second at 1/10/50 concurrent sessions",
        "method": {
            "in_memory_repeats": plan.memory_repeats,
            "agent_step": "one model response asking for one call of a sync `add` tool; "
            "durably, one DBOS step (the model response and its tool call) and its event-log write",
            "turn_lengths": [SHORT, LONG],
            "per_step": f"(median body of {LONG}-step turns - median of {SHORT}-step) / "
            f"{LONG - SHORT}; body = turn workflow body start to return (after "
            "session.waiting is written)",
            "turn": "service.create(message) until the workflow body returns: create "
            "(session row, session.started, enqueue) + pickup (queue poll, workflow "
            "start) + body",
            "throughput": "closed loop: C clients each create a one-step session and wait "
            "for its turn to end, back to back; after an uncounted warm-up of min(C, 10) sessions",
            "repeats": plan.repeats,
            "warmup": plan.warmup,
            "throughput_levels": plan.levels,
        },
        "per_step": per_step,
        "throughput": throughput,
        "stream_lag": stream_lag,
        "breakdown_db_time_per_step": breakdown,
        "profile_sqlite": _profile(raw["sqlite_profile"]),
        "what_if_sqlite": what_if,
        "target": {
            "goal": f"a durable step adds under {TARGET_MS:g} ms on SQLite (median)",
            "added_ms": added,
            "met": added < TARGET_MS,
        },
        "environment": _environment(raw),
    }


def _filesystem(path: str) -> str | None:
    """The type of the filesystem holding ``path`` (Linux), where the databases live."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return None
    best, kind = "", None
    for line in mounts:
        parts = line.split()
        if len(parts) > 2 and path.startswith(parts[1]) and len(parts[1]) >= len(best):
            best, kind = parts[1], parts[2]
    return kind


def _environment(raw: dict[str, Any]) -> dict[str, Any]:
    packages: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            packages[name] = package_version(name)
        except Exception:
            packages[name] = None
    return {
        **machine_info(),
        # the load at the end includes this benchmark's own PostgreSQL and workers
        "load_average_1m_before": raw.get("load_before"),
        "packages": packages,
        "postgres": raw.get("postgres_version") or raw.get("postgres_skipped"),
        "temp_dir_filesystem": _filesystem(tempfile.gettempdir()),
        "benchmark_seconds": round(raw["seconds"], 1),
        "worker_seconds": {
            name: value["worker_seconds"]
            for name, value in raw.items()
            if isinstance(value, dict) and "worker_seconds" in value
        },
        # a shared VM: CPU time taken by other guests while this ran slows every figure
        "cpu_steal_percent": raw.get("cpu_steal_percent"),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


# --- reporting --------------------------------------------------------------------------


def _per_step_table(results: dict[str, Any]) -> str:
    rows = [
        "| configuration | ms / step | added ms / step | × in-memory | DBOS alone ms / step "
        "| eve over DBOS ms / step | 1-step turn ms (create + pickup + body) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    memory = results["per_step"]["in_memory"]
    rows.append(
        f"| in-memory `run_agent` | {memory['per_step_ms']:.3f} | – | 1 | – | – "
        f"| {memory['turn_ms'][str(SHORT)]['body']:.1f} |"
    )
    for db, label in (("sqlite", "durable, SQLite"), ("postgres", "durable, PostgreSQL")):
        stats = results["per_step"][db]
        if "skipped" in stats:
            rows.append(f"| {label} | skipped: {stats['skipped']} | | | | | |")
            continue
        turn = stats["turn_ms"][str(SHORT)]
        rows.append(
            f"| {label} | {stats['per_step_ms']:.1f} | {stats['added_ms_per_step']:.1f} "
            f"| {stats['ratio_to_in_memory']:g} | {stats['dbos_alone_ms_per_step']:.1f} "
            f"| {stats['eve_over_dbos_ms_per_step']:.1f} | {turn['total']:.0f} "
            f"({turn['create']:.0f} + {turn['pickup']:.0f} + {turn['body']:.0f}) |"
        )
    return "\n".join(rows)


def _throughput_table(results: dict[str, Any]) -> str:
    rows = [
        "| database | concurrent sessions | sessions | sessions / s | p50 turn ms | p95 turn ms "
        "| p50 pickup ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for db, levels in results["throughput"].items():
        for level in levels:
            rows.append(
                f"| {db} | {level['concurrency']} | {level['sessions']} "
                f"| {level['sessions_per_second']:.1f} | {level['latency_p50_ms']:.0f} "
                f"| {level['latency_p95_ms']:.0f} | {level['pickup_p50_ms']:.0f} |"
            )
    return "\n".join(rows)


def _seam_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| method | where | calls / step | ms / step | ms / call |",
        "|---|---|---:|---:|---:|",
    ]
    for row in rows:
        per_call = "–" if row["ms_per_call"] is None else f"{row['ms_per_call']:.2f}"
        lines.append(
            f"| `{row['method']}` | {row['where']} | {row['calls_per_step']:.2f} "
            f"| {row['ms_per_step']:.2f} | {per_call} |"
        )
    return "\n".join(lines)


def _profile_tables(profile: dict[str, Any]) -> str:
    self_rows = "\n".join(
        f"| `{r['function']}` | {r['ms_per_step']:.2f} |" for r in profile["self_time"]
    )
    cumulative = "\n".join(
        f"| `{r['function']}` | {r['ms_per_step']:.2f} |" for r in profile["cumulative_eve_dbos"]
    )
    return (
        f"Profiled: {profile['profiled_ms_per_step']:.1f} ms per step (cProfile slows "
        f"everything); busy self time in all threads {profile['busy_self_ms_per_step']:.1f} ms "
        "per step.\n\n"
        "| self time (all threads, idle waits left out) | ms / step |\n|---|---:|\n"
        f"{self_rows}\n\n"
        "| cumulative, eve and DBOS functions | ms / step |\n|---|---:|\n"
        f"{cumulative}\n"
    )


def _what_if_table(results: dict[str, Any]) -> str:
    rows = [
        "| SQLite variant | ms / step | 1-step pickup ms | stream lag p50 / max ms | repeats "
        "| largest DB time, ms / step |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for variant in results["what_if_sqlite"].values():
        top = ", ".join(
            f"`{seam['method'].split('.', 1)[1]}` {seam['ms_per_step']:.1f}"
            for seam in variant["seams"][:3]
        )
        lag = variant["stream_lag"]
        lag_text = f"{lag['p50_ms']:.0f} / {lag['max_ms']:.0f}" if lag else "–"
        rows.append(
            f"| {variant['description']} | {variant['per_step_ms']:.1f} "
            f"| {variant['pickup_ms']:.0f} | {lag_text} | {variant['repeats']} | {top} |"
        )
    return "\n".join(rows)


def _markdown(results: dict[str, Any]) -> str:
    env = results["environment"]
    packages = ", ".join(f"{name} {v}" for name, v in env["packages"].items())
    target = results["target"]
    verdict = "met" if target["met"] else "NOT met"
    lag = results["stream_lag"]
    lag_lines = "\n".join(
        f"- {db}: p50 {stats['p50_ms']:.0f} ms, max {stats['max_ms']:.0f} ms "
        f"({stats['sessions']} sessions)"
        for db, stats in lag.items()
        if stats
    )
    breakdown = "\n\n".join(
        f"**{db}**\n\n{_seam_table(rows)}"
        for db, rows in results["breakdown_db_time_per_step"].items()
    )
    return (
        "# Durability cost\n\n"
        f"A step = one model response asking for one call of a sync `add` tool (instant "
        f"model); durably that is one DBOS step and its event-log write. Per step = "
        f"slope between {SHORT}- and {LONG}-step turns (median workflow body, "
        f"{results['method']['repeats']} interleaved repeats each), so what a turn pays once "
        "(session row, enqueue, queue pickup, checkpoint load and save) is left out; the "
        "last column shows it.\n\n"
        f"{_per_step_table(results)}\n\n"
        f"Target ({target['goal']}): **{verdict}** ({target['added_ms']:.1f} ms).\n\n"
        "## Throughput\n\n"
        "Closed loop: C clients each create a one-step session (1 tool call, then a final "
        "text) and wait for its turn to end, back to back. Turn = `create()` until the turn "
        "workflow returns.\n\n"
        f"{_throughput_table(results)}\n\n"
        "## Event-stream delivery\n\n"
        "How long after the turn workflow returns an in-process follower of "
        "`service.events(..., follow=True)` sees `session.waiting`:\n\n"
        f"{lag_lines}\n\n"
        "## Where a durable step's time goes\n\n"
        "Wall time per step in each database method of DBOS's system database and eve's "
        "store (long minus short turns; methods run in threads, so their time includes "
        "waiting for database locks and the GIL):\n\n"
        f"{breakdown}\n\n"
        "### cProfile, SQLite, all threads\n\n"
        f"{_profile_tables(results['profile_sqlite'])}\n"
        "### What-ifs on SQLite\n\n"
        "Settings eve could change, each run as its own process beside a baseline, the "
        "variants interleaved over rounds (fewer repeats than above):\n\n"
        f"{_what_if_table(results)}\n\n"
        f"Python {env['python']} on {env['platform']}, {env['cpu_count']} CPUs, load "
        f"{env['load_average_1m_before'] or 0:.2f} before the run, CPU steal "
        f"{env['cpu_steal_percent']}% during it, temp dir on "
        f"{env['temp_dir_filesystem']}; {packages}; "
        f"{env['postgres']}; {env['date']}.\n"
    )


def _print(results: dict[str, Any]) -> None:
    print(_per_step_table(results))
    print()
    print(_throughput_table(results))
    target = results["target"]
    print(f"target ({target['goal']}): {'met' if target['met'] else 'NOT met'}")


def _write(results: dict[str, Any]) -> None:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "durability.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS_DIR / "durability.md").write_text(_markdown(results))


def run(quick: bool = False) -> dict[str, Any]:
    """Run the benchmark, print its tables, return the results; write them unless ``quick``."""
    plan = Plan(quick)
    results = _results(_measure(plan), plan)
    _print(results)
    if not quick:
        _write(results)
    return results


main = run


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
