"""DBOS's start and end of a workflow on the serving loop's thread or in threads, in process.

Launches DBOS on eve's SQLite engine with eve's overrides (``dbos_start.py``,
``dbos_sqlite.py``, ``dbos_loop_start.py``) on a serving loop (``serving_loop.py``, slices
of 2 ms), and starts workflows as ``bench.dbos_start_groups`` does (as
``DurableEngine.try_start`` starts a turn), ``AT_ONCE`` at a time, each body returning at
once. Rounds alternate between the writes in threads (``dbos_writes.py``'s groups, as
before) and on the loop (``dbos_loop_writes.py``); each round's figures are the process's
CPU (``time.process_time``, every thread) and wall time per workflow, and DBOS's
commits per workflow; the report is their medians::

    python -m bench.dbos_loop_writes [--rounds 10] [--workflows 400] [--at-once 32]

It prints one JSON line and writes nothing but a temporary directory.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from dbos import DBOS

from bench.dbos_start_groups import _launch, _round, arguments, report

ROUNDS, WORKFLOWS, AT_ONCE = 10, 400, 32


async def _measure(rounds: int, workflows: int, at_once: int, engine: Any) -> dict[str, Any]:
    import sqlalchemy as sa

    from eve.sessions.dbos_loop_writes import stop_writes_on_loop, writes_on_loop

    commits = [0]
    sa.event.listen(engine, "commit", lambda _c: commits.__setitem__(0, commits[0] + 1))
    figures: dict[str, dict[str, list[float]]] = {
        kind: {"cpu_us": [], "wall_us": [], "commits": []} for kind in ("threads", "loop")
    }
    await _round("warm", workflows, at_once)
    not_now = 0
    for index in range(2 * rounds):
        kind = "threads" if index % 2 == 0 else "loop"
        writes = writes_on_loop(engine) if kind == "loop" else None
        commits[0] = 0
        began, cpu = time.perf_counter(), time.process_time()
        await _round(f"r{index}", workflows, at_once)
        measured = figures[kind]
        measured["cpu_us"].append(1e6 * (time.process_time() - cpu) / workflows)
        measured["wall_us"].append(1e6 * (time.perf_counter() - began) / workflows)
        measured["commits"].append(commits[0] / workflows)
        if writes is not None:
            not_now += writes.not_now
            stop_writes_on_loop(engine)
    return {
        "not_now": not_now,
        **{
            kind: {name: round(statistics.median(values), 3) for name, values in got.items()}
            for kind, got in figures.items()
        },
    }


def main() -> None:
    from eve.server.serving_loop import new_serving_loop

    args = arguments(__doc__, rounds=ROUNDS, workflows=WORKFLOWS, at_once=AT_ONCE)
    with (
        tempfile.TemporaryDirectory() as folder,
        asyncio.Runner(loop_factory=new_serving_loop) as runner,
    ):
        engine = runner.run(_launch_async(Path(folder)))
        try:
            medians = runner.run(_measure(args.rounds, args.workflows, args.at_once, engine))
        finally:
            DBOS.destroy()
            engine.dispose()
    report(args, medians)


async def _launch_async(folder: Path) -> Any:
    # on the loop's thread, as a worker launches DBOS: its workflows run on this loop
    return _launch(folder)


if __name__ == "__main__":
    main()
