"""What starting eve's durable service costs on a database that already exists: the part of
an ``eve serve`` (or ``eve dev``) start after the imports, as every restart and every
added worker pays it.

One process compiles a one-tool agent, starts the service once to make its database
(not timed), then starts and stops it ``--starts`` times on that database, in process
(``SessionService.start``: the session store opened, DBOS launched, the sweep run). Each
start's wall time and this process's CPU time (``time.process_time``, every thread) are
recorded; the medians print as one JSON line. Imports are paid once, before the first
start, and are not in the figures (``startup.py`` times whole processes).

Compare two checkouts by alternating processes, each on a fresh database, e.g. under
``flock /work/bench.lock``::

    PYTHONPATH=<checkout> python bench/service_start.py --label <name>

``--database-url`` runs it on a PostgreSQL database instead of SQLite files.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

STARTS = 20


async def _starts(app_root: Path, count: int) -> tuple[list[float], list[float], list[float]]:
    from eve.cli.agent_setup import prepare
    from eve.server import ServerOptions, service_for

    setup = await prepare(app_root, model="offline/test", max_turns=None, announce=False)
    options = ServerOptions(app_root=app_root, token=None)
    first = service_for(options, setup)
    await first.start()  # makes the database: not timed
    await first.stop()
    walls, cpus, stops = [], [], []
    for _ in range(count):
        service = service_for(options, setup)
        wall, cpu = time.perf_counter(), time.process_time()
        await service.start()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        stopped = time.perf_counter()
        await service.stop()
        stops.append(time.perf_counter() - stopped)
    return walls, cpus, stops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=STARTS)
    parser.add_argument("--label", default="")
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    from bench.startup import ONE_TOOL_AGENT, child_env, compile_app, write_agent

    with tempfile.TemporaryDirectory() as workdir:
        app_root = write_agent(Path(workdir) / "agent", ONE_TOOL_AGENT)
        compile_app(app_root, child_env())
        if args.database_url:
            os.environ["EVE_DATABASE_URL"] = args.database_url
        os.environ.setdefault("EVE_WORKER_ID", "bench-start")
        os.chdir(app_root)
        walls, cpus, stops = asyncio.run(_starts(app_root, args.starts))
    print(
        json.dumps(
            {
                "label": args.label,
                "starts": args.starts,
                "start_wall_ms": round(statistics.median(walls) * 1000, 2),
                "start_cpu_ms": round(statistics.median(cpus) * 1000, 2),
                "stop_wall_ms": round(statistics.median(stops) * 1000, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
