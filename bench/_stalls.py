"""``EVE_BENCH_STALLS=FILE`` (a server setting, through ``--server-env``): each worker appends
to ``FILE`` one JSON line per ``POST`` answered (when, in wall-clock seconds, how long it took
inside the server, its claim's part, and the turns of the event loop it spanned) and one per
collection of the garbage collector that took 5 ms or more (its generation, wall and CPU).
Read beside the clients' records (``EVE_BENCH_CLIENTS_KEEP``), it says whether a slow
``POST`` waited for its own worker's collector, and how many turns of the loop it waited.
A diagnostic: it writes a line a ``POST``.
"""

from __future__ import annotations

import contextvars
import gc
import json
import os
import threading
import time
from typing import Any

#: the loop's counters when the request's task was made
_AT_START: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar(
    "bench_at_start", default=None
)
#: a collection logged when it took at least this long (wall, seconds)
LOGGED_SECONDS = 0.005


def stall_log(path: str) -> None:
    """Log each ``POST``'s time in the server and each long collection to ``path``."""
    from eve.server import server_timing, serving

    pid = os.getpid()
    lock = threading.Lock()
    out = open(path, "a", buffering=1)  # noqa: SIM115 - the worker's life long

    def write(row: dict[str, Any]) -> None:
        with lock:
            out.write(json.dumps(row) + "\n")

    timing = server_timing.timing
    make_context = serving.serving_context

    def counted_context() -> contextvars.Context:
        # the loop's counters as the request's task is made, to count the turns it spans
        context = make_context()
        context.run(_AT_START.set, _loop_counts())
        return context

    serving.serving_context = counted_context  # type: ignore[assignment]

    def logged_timing(answer_seconds: float, claim: Any) -> bytes:
        row = {"pid": pid, "kind": "post", "t": time.time(), "answer": answer_seconds}
        row |= {"claim": claim.seconds, "where": claim.where}
        now, then = _loop_counts(), _AT_START.get() or {}
        write(row | {name: now[name] - then.get(name, now[name]) for name in now})
        return timing(answer_seconds, claim)

    server_timing.timing = logged_timing  # type: ignore[assignment]
    began: dict[str, float] = {}

    def collected(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began.update(at=time.perf_counter(), cpu=time.thread_time(), t=time.time())
            return
        wall = time.perf_counter() - began.get("at", 0.0)
        if wall >= LOGGED_SECONDS:
            cpu = time.thread_time() - began.get("cpu", 0.0)
            row = {"pid": pid, "kind": "gc", "t": began.get("t"), "gen": info["generation"]}
            write(row | {"wall": wall, "cpu": cpu, "collected": info["collected"]})

    gc.callbacks.append(collected)


def _loop_counts() -> dict[str, int]:
    """The serving loop's counters (slices run, turns of uvloop's loop taken between them)."""
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return {}
    names = ("slices", "turns", "deferred")
    return {name: getattr(loop, name) for name in names if hasattr(loop, name)}
