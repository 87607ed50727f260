"""Bytes a durable session adds per turn, at turn 10, 100 and 1,000, on SQLite and PostgreSQL.

One session of 1,000 short turns on ``offline/test`` (``bench/_storage_worker.py``, one
process per database: DBOS is a process-wide singleton). After the turns around each mark
(5 and 10; 90 and 100; 990 and 1,000) the worker records the bytes the database holds,
per table; the marginal figure is the growth between the two points divided by the turns
between them, so what a session costs once (the tables, its row) is not in it.

Bytes: SQLite, every table's pages (``dbstat``) and both files as they lie on disk (WAL
included, after a checkpoint); PostgreSQL, ``pg_total_relation_size`` of every table after
a ``VACUUM`` (what autovacuum does in a running server, here at the same points in every
run). PostgreSQL is a throwaway server (``tests/postgres.py``), skipped, saying why, when it
cannot start.

The baseline is eve before versioned checkpoints (the merge base ``3486d9c``), measured by
the same worker with that checkout's ``eve`` first on ``PYTHONPATH``:
``python -m bench.storage_growth --baseline-root DIR`` (DIR a ``git worktree`` of it). Its
figures are kept in ``results/storage_growth.json`` and reused by later runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._machine import machine_info, package_version
from bench._results import RESULTS_DIR, publish
from tests.postgres import PostgresServer, PostgresUnavailable, find_bindir

NAME = "storage_growth"
REPO = Path(__file__).resolve().parent.parent
WORKER = Path(__file__).resolve().parent / "_storage_worker.py"
BASELINE_COMMIT = "3486d9c"


class Plan:
    def __init__(self, quick: bool) -> None:
        self.turns = 30 if quick else 1000
        #: mark → the turn the window starts at (the marginal is over the turns between)
        self.windows = {10: 5, 30: 20} if quick else {10: 5, 100: 80, 1000: 950}

    @property
    def at(self) -> list[int]:
        return sorted({t for pair in self.windows.items() for t in pair})


def _progress(text: str) -> None:
    print(f"  .. {text}", flush=True)


def _worker(plan: Plan, database_url: str | None, eve_root: Path | None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("EVE_DATABASE_URL", "EVE_WORKER_ID")}
    if database_url is not None:
        env["EVE_DATABASE_URL"] = database_url
    if eve_root is not None:
        env["PYTHONPATH"] = str(eve_root)  # that checkout's eve before the installed one
    with tempfile.TemporaryDirectory(prefix="eve-bench-out-") as tmp:
        out = Path(tmp) / "result.json"
        at = ",".join(map(str, plan.at))
        command = [sys.executable, str(WORKER), "--turns", str(plan.turns), "--at", at]
        done = subprocess.run(
            [*command, "--out", str(out)],
            check=False,
            cwd=tmp,  # not the repo: its eve/ would shadow PYTHONPATH's
            env=env,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"storage worker failed:\n{done.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(out.read_text())
    if result["turns_counted"] != plan.turns:
        raise AssertionError(f"{result['turns_counted']} turns counted, {plan.turns} sent")
    return result


def _measure(plan: Plan, eve_root: Path | None) -> dict[str, Any]:
    """Both databases with the ``eve`` of ``eve_root`` (this checkout's when None)."""
    label = "baseline" if eve_root is not None else "this eve"
    _progress(f"{label}: {plan.turns} turns on SQLite")
    runs: dict[str, Any] = {"sqlite": _worker(plan, None, eve_root)}
    bindir = find_bindir()
    if bindir is None:
        runs["postgresql"] = {"skipped": "no PostgreSQL server binaries (initdb, postgres)"}
        return runs
    try:
        server = PostgresServer.start(bindir, durable=True)
    except (PostgresUnavailable, OSError, subprocess.SubprocessError) as error:
        runs["postgresql"] = {"skipped": f"could not start PostgreSQL: {error}"}
        return runs
    try:
        _progress(f"{label}: {plan.turns} turns on PostgreSQL")
        runs["postgresql"] = _worker(plan, server.database("eve_bench_storage"), eve_root)
        runs["postgresql"]["server"] = server.version
    finally:
        server.stop()
    return runs


# --- figures ----------------------------------------------------------------------------


def _totals(sizes: dict[str, dict[str, int]]) -> dict[str, int]:
    """Bytes of DBOS's tables, of eve's, and of both (SQLite: the tables' pages, not the
    files' free pages, which a later write reuses)."""

    def held(tables: dict[str, int]) -> int:
        return sum(size for name, size in tables.items() if name != "_file")

    dbos, eve = held(sizes["dbos"]), held(sizes["eve"])
    return {"dbos": dbos, "eve": eve, "total": dbos + eve}


def marginals(run: dict[str, Any], windows: dict[int, int]) -> dict[str, dict[str, float]]:
    """Per mark: bytes per turn added over its window, DBOS's tables, eve's and both."""
    figures = {}
    for mark, start in windows.items():
        before, after = _totals(run["sizes"][str(start)]), _totals(run["sizes"][str(mark)])
        figures[str(mark)] = {k: (after[k] - before[k]) / (mark - start) for k in after}
    return figures


def _recorded_baseline() -> dict[str, Any] | None:
    path = RESULTS_DIR / f"{NAME}.json"
    if not path.exists():
        return None
    baseline: dict[str, Any] | None = json.loads(path.read_text()).get("baseline")
    return baseline


def _table(results: dict[str, Any]) -> str:
    rows = [
        "| database | turn | bytes / turn (DBOS tables) | (eve tables) | total "
        "| baseline total | baseline ÷ now | database at this turn (baseline) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    baseline = results.get("baseline") or {}
    for db in ("sqlite", "postgresql"):
        now = results["runs"][db]
        if "skipped" in now:
            rows.append(f"| {db} | skipped: {now['skipped']} | | | | | | |")
            continue
        base = baseline.get("figures", {}).get(db, {})
        base_sizes = baseline.get("runs", {}).get(db, {}).get("sizes", {})
        for mark, fig in results["figures"][db].items():
            old = base.get(mark, {}).get("total")
            ratio = f"{old / fig['total']:.1f}×" if old and fig["total"] > 0 else "–"
            held = f"{_totals(now['sizes'][mark])['total'] / 1e6:.1f} MB"
            if mark in base_sizes:
                held += f" ({_totals(base_sizes[mark])['total'] / 1e6:.1f} MB)"
            rows.append(
                f"| {db} | {mark} | {fig['dbos']:,.0f} | {fig['eve']:,.0f} | {fig['total']:,.0f} "
                f"| {'–' if old is None else f'{old:,.0f}'} | {ratio} | {held} |"
            )
    return "\n".join(rows)


def _markdown(results: dict[str, Any]) -> str:
    base = results.get("baseline")
    windows = ", ".join(f"{start} to {mark}" for mark, start in results["windows"].items())
    said = (
        f"baseline: eve at `{base['commit']}` measured {base['date']}"
        if base
        else "no baseline recorded (run with --baseline-root)"
    )
    return (
        f"# storage_growth ({results['date']})\n\n"
        f"One session of {results['turns']} short turns on `offline/test`; bytes the "
        "database gains per turn around each turn (marginal: the growth from turn "
        f"{windows} divided by the turns between), before (baseline) and after versioned "
        f"checkpoints; {said}. SQLite: the tables' pages; PostgreSQL: "
        "`pg_total_relation_size` after `VACUUM FULL`, whose packing moves a 5-turn window "
        f"by a few KB.\n\n{_table(results)}\n"
    )


def run(quick: bool = False, baseline_root: Path | None = None) -> dict[str, Any]:
    plan = Plan(quick)
    runs = _measure(plan, None)
    figures = {db: marginals(r, plan.windows) for db, r in runs.items() if "skipped" not in r}
    baseline = _recorded_baseline() if baseline_root is None else None
    if baseline_root is not None:
        measured = _measure(plan, baseline_root)
        baseline = {
            "commit": BASELINE_COMMIT,
            "date": datetime.now(UTC).date().isoformat(),
            "runs": measured,
            "figures": {
                db: marginals(r, plan.windows) for db, r in measured.items() if "skipped" not in r
            },
        }
    results = {
        "date": datetime.now(UTC).date().isoformat(),
        "machine": machine_info(),
        "packages": {p: package_version(p) for p in ("eve", "dbos", "SQLAlchemy", "psycopg")},
        "turns": plan.turns,
        "windows": {str(k): v for k, v in plan.windows.items()},
        "runs": runs,
        "figures": figures,
        "baseline": baseline if baseline and baseline.get("runs") else None,
    }
    publish(NAME, results, _markdown(results), quick=quick)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.storage_growth", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="30 turns; writes nothing")
    parser.add_argument(
        "--baseline-root",
        type=Path,
        help=f"a checkout of eve at {BASELINE_COMMIT}: measure the baseline with its eve",
    )
    args = parser.parse_args(argv)
    run(quick=args.quick, baseline_root=args.baseline_root)


if __name__ == "__main__":
    main()
