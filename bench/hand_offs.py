"""A worker's hand-off of a call to a thread and back, the two ways: ``asyncio.to_thread``
through the lanes as the loop's executor, and ``lane_calls.in_thread``.

In process, on uvloop (``eve serve``'s loop), the lanes' ``eve-turn`` pool of one thread:

- **objects**: the objects the collector tracks that a call queued behind a busy thread
  keeps (1,000 queued, counted with ``gc.get_objects``): what a middle collection walks for
  every call in flight;
- **CPU**: 200 rounds of 100 calls at once (``gather``) of a function that does nothing,
  the process's CPU and the loop thread's, a call; the two ways alternate round by round
  and the figures are medians of the rounds.

``python -m bench.hand_offs`` prints the table; it writes nothing (the figures are in
``docs/sessions.md``).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import uvloop

from eve.sessions.lane_calls import in_thread
from eve.sessions.lane_pool import LanePool
from eve.sessions.thread_lanes import LanedExecutor

Way = Callable[[Callable[[], Any]], Awaitable[Any]]
WAYS: dict[str, Way] = {"to_thread": asyncio.to_thread, "in_thread": in_thread}
QUEUED = 1_000
ROUNDS = 200
AT_ONCE = 100


def _nothing() -> None:
    return None


async def _objects_kept(way: Way) -> float:
    release = threading.Event()
    busy = asyncio.ensure_future(way(release.wait))
    await asyncio.sleep(0.05)  # the one thread is now in ``release.wait``
    gc.collect()
    before = len(gc.get_objects())
    calls = [asyncio.ensure_future(way(_nothing)) for _ in range(QUEUED)]
    await asyncio.sleep(0)  # each call's coroutine has queued its call
    kept = (len(gc.get_objects()) - before) / QUEUED
    release.set()
    await asyncio.gather(busy, *calls)
    return kept


async def _round(way: Way) -> tuple[float, float]:
    cpu, loop_cpu = time.process_time(), time.thread_time()
    await asyncio.gather(*(way(_nothing) for _ in range(AT_ONCE)))
    return (
        (time.process_time() - cpu) / AT_ONCE * 1e6,
        (time.thread_time() - loop_cpu) / AT_ONCE * 1e6,
    )


async def _measure() -> dict[str, dict[str, float]]:
    loop = asyncio.get_running_loop()
    lanes = LanedExecutor(LanePool(max_workers=1, thread_name_prefix="eve-turn"))
    loop.set_default_executor(lanes)
    lanes.serve(loop)
    try:
        kept = {name: await _objects_kept(way) for name, way in WAYS.items()}
        rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in WAYS}
        for _ in range(ROUNDS):
            for name, way in WAYS.items():
                rounds[name].append(await _round(way))
    finally:
        lanes.shutdown(wait=True)
    return {
        name: {
            "objects a queued call": kept[name],
            "CPU µs a call": statistics.median(r[0] for r in rounds[name]),
            "loop thread CPU µs a call": statistics.median(r[1] for r in rounds[name]),
        }
        for name in WAYS
    }


def main() -> None:
    found = uvloop.run(_measure())
    columns = list(next(iter(found.values())))
    print("| way | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for name, figures in found.items():
        print(f"| {name} | " + " | ".join(f"{figures[c]:.1f}" for c in columns) + " |")


if __name__ == "__main__":
    main()
