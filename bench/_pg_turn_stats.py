"""``EVE_BENCH_PG_TURNS=FILE``: where a PostgreSQL worker's turns wait, each second, appended
to FILE as JSON (a diagnostic; ``docs/postgres.md``, *What bounds one worker at 1,000*).

Per thread pool (by its threads' name: ``eve-pg`` the store's lane, ``eve-turn`` DBOS's calls
and sync tools, ``eve-request``, DBOS's own): calls submitted, their wait in the pool's queue
and their run (wall), and at the second's end the calls queued and running. Per SQLAlchemy
pool (by its size): the time checkouts waited for a connection. The compute permits held and
waited for (a step holds one through its model call), the event loop's lag (a callback due
every 50 ms, how late it ran), the process's and its main thread's CPU and the machine's,
the time its threads (and its main thread) waited runnable for a core (``schedstat``);
and, from a thread on a connection of its own sampling ``pg_stat_activity`` every 20 ms, the
database's other backends by state and wait event (a lock waited for by its statement's
first words).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench._pg_claim_stats import SAMPLE_SECONDS, _machine_cpu

#: every other backend of this database: its state, wait event and, when it waits for a
#: lock, its statement's first words
ACTIVITY = (
    "SELECT state, coalesce(wait_event_type, '-') || ':' || coalesce(wait_event, '-'),"
    " CASE WHEN wait_event_type = 'Lock' THEN left(query, 50) END"
    " FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
)
#: how often the loop's lag is looked at, in seconds
LAG_SECONDS = 0.05


class _Pool:
    """One thread pool's second: calls, their queue waits and runs, what is queued now."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.submitted = 0
        self.waited = 0.0
        self.waited_max = 0.0
        self.ran = 0.0
        self.queued = 0
        self.running = 0

    def row(self) -> dict[str, Any]:
        with self.lock:
            row = {
                "n": self.submitted,
                "wait": round(self.waited, 4),
                "wait_max": round(self.waited_max, 4),
                "run": round(self.ran, 4),
                "queued": self.queued,
                "running": self.running,
            }
            self.submitted, self.waited, self.waited_max, self.ran = 0, 0.0, 0.0, 0.0
        return row


def pg_turn_stats(path: str) -> None:
    """Time the worker's thread pools, SQLAlchemy pools, permits and loop into ``path``."""
    pools: dict[str, _Pool] = defaultdict(_Pool)
    checkouts: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    gates: list[Any] = []
    lag: dict[str, float] = {"sum": 0.0, "max": 0.0, "n": 0.0}
    _time_thread_pools(pools)
    _time_checkouts(checkouts)
    _keep_gates(gates)
    _watch_loop(lag)
    backends: Counter[str] = Counter()
    threading.Thread(target=_sample, args=(backends,), daemon=True, name="eve-bench-pg-act").start()
    threading.Thread(
        target=_dump,
        args=(path, pools, checkouts, gates, lag, backends),
        daemon=True,
        name="eve-bench-pg-turns",
    ).start()


def _time_thread_pools(pools: dict[str, _Pool]) -> None:
    submit = ThreadPoolExecutor.submit

    def timed(self: ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        name = getattr(self, "_thread_name_prefix", "")
        pool = pools["unnamed" if name.startswith("ThreadPoolExecutor") else name]
        at = time.perf_counter()
        with pool.lock:
            pool.submitted += 1
            pool.queued += 1

        def run() -> Any:
            began = time.perf_counter()
            with pool.lock:
                pool.queued -= 1
                pool.running += 1
                pool.waited += began - at
                pool.waited_max = max(pool.waited_max, began - at)
            try:
                return fn(*args, **kwargs)
            finally:
                with pool.lock:
                    pool.running -= 1
                    pool.ran += time.perf_counter() - began

        return submit(self, run)

    ThreadPoolExecutor.submit = timed  # type: ignore[method-assign,assignment]


def _time_checkouts(checkouts: dict[str, list[float]]) -> None:
    from sqlalchemy.pool import QueuePool

    get = QueuePool._do_get

    def timed(self: QueuePool) -> Any:
        at = time.perf_counter()
        try:
            return get(self)
        finally:
            seen = checkouts[f"pool{self.size()}"]
            seen[0] += time.perf_counter() - at
            seen[1] += 1

    QueuePool._do_get = timed  # type: ignore[method-assign]


def _keep_gates(gates: list[Any]) -> None:
    from eve.sessions.compute_gate import ComputeGate

    init = ComputeGate.__init__

    def kept(self: ComputeGate, permits: int) -> None:
        init(self, permits)
        gates.append(self)

    ComputeGate.__init__ = kept  # type: ignore[method-assign]


def _watch_loop(lag: dict[str, float]) -> None:
    """Started by the first gate's first use, on the worker's loop."""
    from eve.sessions.compute_gate import ComputeGate

    acquire = ComputeGate._acquire
    started: list[bool] = []

    async def watched(self: ComputeGate) -> None:
        if not started:
            started.append(True)
            loop = asyncio.get_running_loop()
            _tick(loop, lag, loop.time() + LAG_SECONDS)
        await acquire(self)

    ComputeGate._acquire = watched  # type: ignore[method-assign]


def _tick(loop: asyncio.AbstractEventLoop, lag: dict[str, float], due: float) -> None:
    late = max(0.0, loop.time() - due)
    lag["sum"] += late
    lag["n"] += 1
    lag["max"] = max(lag["max"], late)
    loop.call_at(loop.time() + LAG_SECONDS, _tick, loop, lag, loop.time() + LAG_SECONDS)


def _dump(
    path: str,
    pools: dict[str, _Pool],
    checkouts: dict[str, list[float]],
    gates: list[Any],
    lag: dict[str, float],
    backends: Counter[str],
) -> None:
    pid = os.getpid()
    machine = _machine_cpu()
    tick = os.sysconf("SC_CLK_TCK")

    def cpu_of(where: str) -> float:
        fields = Path(where).read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / tick

    with open(path, "a") as out:
        while True:
            time.sleep(1.0)
            row: dict[str, Any] = {"t": round(time.time(), 2), "pid": pid}
            row["pools"] = {name: pool.row() for name, pool in list(pools.items())}
            row["checkout"] = {k: [round(v[0], 4), int(v[1])] for k, v in checkouts.items()}
            checkouts.clear()
            row["gate"] = [[g.busy, g.waiting] for g in gates]
            n = lag["n"] or 1.0
            row["lag_mean"], row["lag_max"] = round(lag["sum"] / n, 4), round(lag["max"], 4)
            lag.update(sum=0.0, max=0.0, n=0.0)
            row["proc_cpu"] = cpu_of(f"/proc/{pid}/stat")
            row["main_cpu"] = cpu_of(f"/proc/{pid}/task/{pid}/stat")
            row["threads"] = threading.active_count()
            row["runnable_wait_s"], row["main_runnable_wait_s"] = _runnable_waits(pid)
            now = _machine_cpu()
            row["machine_busy"] = round((now[0] - machine[0]) / max(now[1] - machine[1], 1), 3)
            machine = now
            row["backends"] = dict(backends)
            backends.clear()
            out.write(json.dumps(row) + "\n")
            out.flush()


def _sample(backends: Counter[str]) -> None:
    import psycopg
    import sqlalchemy as sa

    url = sa.engine.make_url(os.environ["EVE_DATABASE_URL"]).set(drivername="postgresql")
    with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as db:
        while True:
            time.sleep(SAMPLE_SECONDS)
            for state, wait, query in db.execute(ACTIVITY).fetchall():
                backends[f"{state} {wait}" + (f" {query}" if query else "")] += 1


def _runnable_waits(pid: int) -> tuple[float, float]:
    """Seconds all the process's threads, and its main thread, have waited runnable for a
    core since they started (``/proc/<pid>/task/*/schedstat``, its second field)."""
    total = main = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            waited = int((task / "schedstat").read_text().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            continue
        total += waited
        if task.name == str(pid):
            main = waited
    return round(total, 3), round(main, 3)
