"""``EVE_BENCH_PG_CLAIMS=FILE``: where a worker's claims on PostgreSQL spend their time, each
second, appended to FILE as JSON (a diagnostic; ``docs/postgres.md``, *Two workers*).

Per claim on the loop (``eve/sessions/pg_claim_now.py``): its wait for a loop connection and
its call (sent to its answer read on the loop); the calls left to a thread by why; how often
an answer not in within the hold was looked for on the loop (``polls``: at the start, at
each pause between two slices, and when its socket turned readable) and the time those
looks took (``poll_ms``); and, from
one sampling thread per worker on a connection of its own, every 20 ms, the loop
connections' backends by state and wait event (``pg_stat_activity``), and the machine's CPU
(``/proc/stat``) against this process's.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from typing import Any

#: how often the sampling thread looks at pg_stat_activity, in seconds
SAMPLE_SECONDS = 0.02
#: the loop connections' backends (their last call a claim's or a create's), and each one's
#: state and wait event
ACTIVITY = (
    "SELECT state, coalesce(wait_event_type, '-') || ':' || coalesce(wait_event, '-')"
    " FROM pg_stat_activity WHERE query LIKE 'SELECT outcome%' AND pid <> pg_backend_pid()"
)


def pg_claim_stats(path: str) -> None:
    """Time the loop's claims and sample PostgreSQL's view of them into ``path``."""
    from eve.sessions import pg_claim_now

    stats: dict[str, Any] = {
        "wait": [],
        "call": [],
        "calls": 0,
        "states": Counter(),
        "polls": 0,
        "poll_s": 0.0,
    }
    claims: list[Any] = []
    _count_polls(stats)
    klass = pg_claim_now.PgLoopClaims
    connection, call = klass._connection, klass._call

    async def waited(self: Any, *args: Any) -> Any:
        if not claims:  # the worker's one (made as it started, before this was loaded)
            claims.append(self)
        at = time.perf_counter()
        try:
            return await connection(self, *args)
        finally:
            stats["wait"].append(time.perf_counter() - at)

    async def called(self: Any, conn: Any, command: bytes, params: Any) -> Any:
        at = time.perf_counter()
        try:
            return await call(self, conn, command, params)
        finally:
            stats["call"].append(time.perf_counter() - at)
            stats["calls"] += 1

    klass._connection = waited  # type: ignore[method-assign]
    klass._call = called  # type: ignore[method-assign]
    threading.Thread(
        target=_sample, args=(path, stats, claims), daemon=True, name="eve-bench-pg-claims"
    ).start()


def _count_polls(stats: dict[str, Any]) -> None:
    """Count the looks for an answer on the loop (``Libpq.answered`` outside the hold's
    ``Libpq.wait``), and time them."""
    from eve.sessions.pg_libpq import Libpq

    answered, wait = Libpq.answered, Libpq.wait
    holding = [False]

    def looked(self: Any, conn: int) -> bool:
        if holding[0]:
            return answered(self, conn)
        at = time.perf_counter()
        try:
            return answered(self, conn)
        finally:
            stats["poll_s"] += time.perf_counter() - at
            stats["polls"] += 1

    def held(self: Any, conn: int, seconds: float) -> bool:
        holding[0] = True
        try:
            return wait(self, conn, seconds)
        finally:
            holding[0] = False

    Libpq.answered = looked  # type: ignore[method-assign]
    Libpq.wait = held  # type: ignore[method-assign]


def _sample(path: str, stats: dict[str, Any], claims: list[Any]) -> None:
    import psycopg
    import sqlalchemy as sa

    url = sa.engine.make_url(os.environ["EVE_DATABASE_URL"]).set(drivername="postgresql")
    url = url.render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True) as db, open(path, "a") as out:
        last, machine = time.monotonic(), _machine_cpu()
        own = _own_cpu()
        while True:
            time.sleep(SAMPLE_SECONDS)
            rows = db.execute(ACTIVITY).fetchall()
            for state, wait in rows:
                stats["states"][f"{state} {wait}"] += 1
            if time.monotonic() - last < 1.0:
                continue
            last = time.monotonic()
            now_machine, now_own = _machine_cpu(), _own_cpu()
            out.write(json.dumps(_row(stats, claims, machine, now_machine, own, now_own)) + "\n")
            out.flush()
            machine, own = now_machine, now_own
            stats.update(wait=[], call=[], states=Counter(), polls=0, poll_s=0.0)


def _row(
    stats: dict[str, Any],
    claims: list[Any],
    machine: tuple[float, float],
    now_machine: tuple[float, float],
    own: float,
    now_own: float,
) -> dict[str, Any]:
    busy, total = now_machine[0] - machine[0], now_machine[1] - machine[1]
    return {
        "t": time.time(),
        "pid": os.getpid(),
        "wait": _spread(stats["wait"]),
        "call": _spread(stats["call"]),
        "states": dict(stats["states"]),
        "machine_busy": round(busy / total, 3) if total else None,
        "own_cpu_s": round(now_own - own, 3),
        "polls": stats["polls"],
        "poll_ms": round(1000 * stats["poll_s"], 3),
        "claims": [
            {
                "held": c.held,
                "awaited": c.awaited,
                "waited": c.waited,
                "not_now": c.not_now,
                "fell_back": dict(c.fell_back),
                "open": c._open,
            }
            for c in claims
        ],
    }


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    at = lambda q: round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)  # noqa: E731
    return {"n": len(ordered), "p50": at(0.5), "p95": at(0.95), "max": at(1.0)}


def _machine_cpu() -> tuple[float, float]:
    """The machine's busy and total jiffies (``/proc/stat``'s first line)."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return float(sum(fields) - idle), float(sum(fields))


def _own_cpu() -> float:
    return time.process_time()
