"""``EVE_BENCH_TURN_STAGES=FILE``: where a turn's time goes beyond its model's, per turn
(a diagnostic; ``docs/sessions.md``, *A turn's overhead at 1,000 sessions, stage by stage*).

In the server, appended to FILE as JSON lines every second:

- each model call (``model``): the turn's key, the step, the asyncio task that called it, the
  wall-clock time it was entered, the latency drawn for it and the time its sleep ended (its
  overrun past the drawn latency is the event loop's lag at its wake-up);
- each call the worker's executor took (``thread_lanes.LanedExecutor.submit``, ``call``):
  its lane (``request``, ``turn`` for the turns' pool, ``read``, ``write`` for a groupable
  write of the writer lane, ``alone``, ``pooled``), the task that handed it over, the time it
  was handed over, the time a thread took it (``Future.set_running_or_notify_cancel``: the
  writer lane calls it as it takes the write into a group) and the time its answer was set
  (for a groupable write, its group's commit).

``python -m bench._turn_stages FILE CLIENTS_DIR SINCE UNTIL`` joins these with the clients'
records (``EVE_BENCH_CLIENTS_KEEP=DIR``) by the turn's key, for the turns that ended in the
window: from the POST's answer to the first model call, each gap between a step's wake-up and
the next call, each call's overrun, and from the last wake-up to the client's
``session.waiting``; and the executor's calls made by each turn's task while it ran, by lane
(queue wait and run), summed per turn.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LOCK = threading.Lock()
#: how often the loop's lag is looked at, in seconds
LAG_SECONDS = 0.05


def _task_id() -> int:
    try:
        task = asyncio.current_task()
    except RuntimeError:  # not on the loop's thread
        return 0
    return id(task) if task is not None else 0


def turn_stages(
    path: str, model: type[Any], turn_and_step: Callable[[Any], tuple[str, int]]
) -> None:
    """Time ``model``'s calls and the worker's executor's calls into ``path``."""
    rows: list[dict[str, Any]] = []
    _time_model(model, turn_and_step, rows)
    _time_executor(rows)
    threading.Thread(target=_dump, args=(path, rows), daemon=True, name="eve-bench-stages").start()


def _time_model(
    model: type[Any], turn_and_step: Callable[[Any], tuple[str, int]], rows: list[dict[str, Any]]
) -> None:
    stream = model.stream

    watching: list[bool] = []

    async def timed(self: Any, request: Any) -> AsyncIterator[Any]:
        if not watching:
            watching.append(True)
            _watch_loop(rows)
        key, step = turn_and_step(request)
        entered = time.time()
        drawn = self.spec.step_seconds(key, step)
        woke: float | None = None
        async for event in stream(self, request):
            if woke is None:
                woke = time.time()
            yield event
        row = {"model": key, "step": step, "task": _task_id(), "in": entered, "drawn": drawn}
        with LOCK:
            rows.append(row | {"woke": woke or time.time()})

    model.stream = timed


def _time_executor(rows: list[dict[str, Any]]) -> None:
    from eve.sessions import thread_lanes
    from eve.sessions.after_answer import answered_already
    from eve.sessions.database_errors import failing_fast

    running = Future.set_running_or_notify_cancel

    def stamped(self: Future[Any]) -> bool:
        self._bench_ran = time.time()  # type: ignore[attr-defined]
        return running(self)

    Future.set_running_or_notify_cancel = stamped  # type: ignore[method-assign]
    submit = thread_lanes.LanedExecutor.submit

    def timed(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        at = time.time()
        urgent = failing_fast() and not answered_already()
        found = None if urgent else thread_lanes.store_call(fn)
        lane = "request" if urgent else ("turn" if found is None else found[0])
        task = _task_id()
        loop = asyncio.get_running_loop()
        future = submit(self, fn, *args, **kwargs)

        def done(settled: Future[Any]) -> None:
            ended = time.time()
            ran = getattr(settled, "_bench_ran", ended)
            row = {"call": lane, "task": task, "at": at, "ran": ran, "done": ended}

            def back() -> None:
                # posted as the answer is (``wrap_future``'s ``call_soon_threadsafe``): when
                # the loop came to it is when the caller could go on
                with LOCK:
                    rows.append(row | {"back": time.time()})

            loop.call_soon_threadsafe(back)

        future.add_done_callback(done)
        return future

    thread_lanes.LanedExecutor.submit = timed  # type: ignore[method-assign]


def _watch_loop(rows: list[dict[str, Any]]) -> None:
    """On the loop that calls it: a callback due every ``LAG_SECONDS``, and how late it ran
    (the loop's lag, which each hop of a turn back to the loop waits for)."""

    def ran(row: dict[str, Any], posted: float) -> None:
        with LOCK:
            rows.append(row | {"deferred": time.perf_counter() - posted})

    def tick(due: float) -> None:
        now = time.perf_counter()
        loop = asyncio.get_running_loop()
        # a timer's callback runs at a turn of uvloop's loop; a task's next step, called
        # soon, waits in ``serving_loop``'s queue of the turns' callbacks (``_deferred``)
        queued = len(getattr(loop, "_deferred", ()))
        loop.call_soon(ran, {"lag": now - due, "t": time.time(), "queued": queued}, now)
        loop.call_at(loop.time() + LAG_SECONDS, tick, now + LAG_SECONDS)

    tick(time.perf_counter())


def _dump(path: str, rows: list[dict[str, Any]]) -> None:
    with open(path, "a") as out:
        while True:
            time.sleep(1.0)
            with LOCK:
                taken = rows[:]
                rows.clear()
            pid = __import__("os").getpid()
            for row in taken:
                out.write(json.dumps(row | {"pid": pid}) + "\n")
            out.flush()


# --- the report -------------------------------------------------------------------------------


def _quantiles(values: Sequence[float], *, unit: float = 1000.0, name: str = "ms") -> str:
    """p50, p95 and mean of ``values`` times ``unit`` (seconds shown as milliseconds)."""
    if not values:
        return "-"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    median, mean = statistics.median(ordered), statistics.fmean(ordered)
    return f"p50 {unit * median:.1f} p95 {unit * p95:.1f} mean {unit * mean:.1f} {name}"


def _client_turns(keep: Path) -> Iterable[dict[str, Any]]:
    for path in sorted(keep.glob("*.json")):
        yield from json.loads(path.read_text()).get("turns", [])


@dataclass
class _Server:
    """The server's rows of the window: model calls by turn key, the loop's ticks, every
    executor call by lane (queued, run, back to the loop) and by the task that made it."""

    calls: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    lags: list[float] = field(default_factory=list)
    deferred: list[float] = field(default_factory=list)
    queued: list[float] = field(default_factory=list)
    lanes: dict[str, tuple[list[float], ...]] = field(
        default_factory=lambda: defaultdict(lambda: ([], [], []))
    )
    by_task: dict[tuple[int, int], list[dict[str, Any]]] = field(
        default_factory=lambda: defaultdict(list)
    )


def _read_server(stages: Path, since: float, until: float) -> _Server:
    server = _Server()
    for line in stages.read_text().splitlines():
        row = json.loads(line)
        if "model" in row:
            server.calls[row["model"]].append(row)
        elif "lag" in row:
            if since <= row["t"] <= until:
                server.lags.append(row["lag"])
                server.deferred.append(row["deferred"])
                server.queued.append(row["queued"])
        else:
            if since <= row["at"] <= until:
                hop = server.lanes[row["call"]]
                hop[0].append(row["ran"] - row["at"])
                hop[1].append(row["done"] - row["ran"])
                hop[2].append(row["back"] - row["done"])
            server.by_task[(row["pid"], row["task"])].append(row)
    return server


def _stages(turn: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, float]:
    """A turn's time from its POST to its ``session.waiting``, stage by stage (seconds)."""
    answered = turn["sent"] + turn["post_s"]
    stages = {
        "post (send to 202)": turn["post_s"],
        "202 to step 0's call": steps[0]["in"] - answered,
    }
    for before, after in itertools.pairwise(steps):
        stages[f"step {before['step']} wake to step {after['step']}'s call"] = (
            after["in"] - before["woke"]
        )
    for step in steps:
        stages[f"step {step['step']} overrun"] = step["woke"] - step["in"] - step["drawn"]
    stages["last wake to session.waiting"] = turn["ended"] - steps[-1]["woke"]
    stages["overhead (all)"] = turn["ended"] - turn["sent"] - sum(s["drawn"] for s in steps)
    return stages


def _turn_calls(
    server: _Server, turn: dict[str, Any], steps: list[dict[str, Any]]
) -> dict[str, list[float]]:
    """The executor's calls the turn's tasks made while it ran, by lane: queued, run and
    back, and how many (a task's id is its own while it lives)."""
    answered = turn["sent"] + turn["post_s"]
    by_lane: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    seen: set[int] = set()
    for step in steps:
        for row in server.by_task.get((step["pid"], step["task"]), []):
            if answered <= row["at"] <= turn["ended"] and id(row) not in seen:
                seen.add(id(row))
                sums = by_lane[row["call"]]
                sums[0] += row["ran"] - row["at"]
                sums[1] += row["back"] - row["ran"]
                sums[2] += 1
    return by_lane


def report(stages: Path, keep: Path, since: float, until: float) -> dict[str, Any]:
    server = _read_server(stages, since, until)
    stage: dict[str, list[float]] = defaultdict(list)
    lanes: dict[str, list[float]] = defaultdict(list)
    counts: dict[str, list[float]] = defaultdict(list)
    for turn in _client_turns(keep):
        steps = sorted(server.calls.get(turn.get("key", ""), []), key=lambda r: r["step"])
        if not since <= turn.get("ended", 0.0) <= until or len(steps) != 3:
            continue
        for name, seconds in _stages(turn, steps).items():
            stage[name].append(seconds)
        for lane, (queued, ran, n) in _turn_calls(server, turn, steps).items():
            lanes[f"{lane} queue a turn"].append(queued)
            lanes[f"{lane} run and back a turn"].append(ran)
            counts[f"{lane} calls a turn"].append(n)
    out: dict[str, Any] = {"turns": len(stage["overhead (all)"])}
    out["timer lag"] = _quantiles(server.lags)
    out["a turn's callback's wait in the slices' queue"] = _quantiles(server.deferred)
    out["callbacks queued"] = _quantiles(server.queued, unit=1, name="")
    for lane, (queued, ran, back) in sorted(server.lanes.items()):
        out[f"all {lane}: calls/s"] = round(len(queued) / (until - since), 1)
        out[f"all {lane}: queued"] = _quantiles(queued)
        out[f"all {lane}: run"] = _quantiles(ran)
        out[f"all {lane}: back to the loop"] = _quantiles(back)
    out |= {name: _quantiles(values) for name, values in stage.items()}
    out |= {name: _quantiles(values) for name, values in sorted(lanes.items())}
    out |= {name: _quantiles(v, unit=1, name="") for name, v in sorted(counts.items())}
    return out


def main(argv: Sequence[str]) -> None:
    stages, keep, since, until = argv
    for name, value in report(Path(stages), Path(keep), float(since), float(until)).items():
        print(f"{name}: {value}")


if __name__ == "__main__":
    main(sys.argv[1:])
