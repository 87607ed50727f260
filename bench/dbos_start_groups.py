"""DBOS's starts of the turns that messages' requests began, alone or grouped, in process.

A message's request answers ``202`` and then starts its turn (``after_answer``); that start,
DBOS's status and inputs (``init_workflow``), ran in a transaction of its own on DBOS's
SQLite file, as a request's write does. It may now meet the other workflows' starts and
ends in one transaction (``dbos_writes.py``). This launches DBOS on eve's SQLite engine with
eve's overrides (``dbos_start.py``, ``dbos_sqlite.py``) and starts workflows the way
``DurableEngine.try_start`` does (``fail_fast`` and ``after_answer`` around
``DBOS.start_workflow_async``), ``AT_ONCE`` at a time, each body returning at once (its end
then follows at once: the busiest case for its start to meet others). Rounds alternate
between the rule before (such a start alone: ``answered_already`` taken as False in
``dbos_writes``) and this one; each round's figures are the process's CPU
(``time.process_time``, every thread) per workflow and DBOS's commits per workflow, and the
report is their medians::

    python -m bench.dbos_start_groups [--rounds 15] [--workflows 400] [--at-once 8]

It prints one JSON line and writes nothing but a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from dbos import DBOS, SetWorkflowID

ROUNDS, WORKFLOWS, AT_ONCE = 15, 400, 8


@DBOS.workflow(name="bench.grouped_start")
async def _grouped_start(n: int) -> int:
    return n


async def _start_one(workflow_id: str, n: int) -> int:
    from eve.sessions.after_answer import after_answer
    from eve.sessions.database_errors import fail_fast

    # a request's context, answered: as ``DurableEngine.try_start`` starts a turn
    with fail_fast(), after_answer(), SetWorkflowID(workflow_id):
        handle = await DBOS.start_workflow_async(_grouped_start, n)
    result: int = await handle.get_result()
    return result


async def _round(tag: str, workflows: int, at_once: int) -> None:
    gate = asyncio.Semaphore(at_once)

    async def one(n: int) -> int:
        async with gate:
            return await _start_one(f"{tag}-{n}", n)

    done = await asyncio.gather(*(one(n) for n in range(workflows)))
    assert done == list(range(workflows)), "every workflow returns its own number"


def _launch(folder: Path) -> Any:
    from eve.sessions.dbos_sqlite import prepare_sqlite_writes
    from eve.sessions.dbos_start import prepare_workflow_starts
    from eve.sessions.sqlite import sqlite_engine

    prepare_workflow_starts()
    prepare_sqlite_writes()
    url = f"sqlite:///{folder / 'dbos.sqlite'}"
    engine = sqlite_engine(url, immediate=True)
    DBOS(config={"name": "bench", "system_database_url": url, "system_database_engine": engine})
    DBOS.launch()
    return engine


async def _measure(rounds: int, workflows: int, at_once: int, engine: Any) -> dict[str, Any]:
    import sqlalchemy as sa

    from eve.sessions import dbos_writes

    commits = [0]
    sa.event.listen(engine, "commit", lambda _c: commits.__setitem__(0, commits[0] + 1))
    rule = dbos_writes.answered_already
    figures: dict[str, dict[str, list[float]]] = {
        kind: {"cpu_us": [], "commits": []} for kind in ("alone", "grouped")
    }
    await _round("warm", workflows, at_once)
    for index in range(2 * rounds):
        kind = "alone" if index % 2 == 0 else "grouped"
        dbos_writes.answered_already = rule if kind == "grouped" else (lambda: False)  # type: ignore[assignment]
        commits[0] = 0
        began = time.process_time()
        await _round(f"r{index}", workflows, at_once)
        figures[kind]["cpu_us"].append(1e6 * (time.process_time() - began) / workflows)
        figures[kind]["commits"].append(commits[0] / workflows)
    dbos_writes.answered_already = rule
    return {
        kind: {name: round(statistics.median(values), 3) for name, values in measured.items()}
        for kind, measured in figures.items()
    }


def arguments(doc: str | None, *, rounds: int, workflows: int, at_once: int) -> argparse.Namespace:
    """The command line's rounds, workflows and workflows at once (``doc``: the module's)."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--workflows", type=int, default=workflows)
    parser.add_argument("--at-once", type=int, default=at_once)
    return parser.parse_args()


def report(args: argparse.Namespace, medians: dict[str, Any]) -> None:
    """One JSON line: the command line's figures and the medians."""
    given = {"rounds": args.rounds, "workflows": args.workflows, "at_once": args.at_once}
    print(json.dumps(given | medians))


def main() -> None:
    args = arguments(__doc__, rounds=ROUNDS, workflows=WORKFLOWS, at_once=AT_ONCE)
    with tempfile.TemporaryDirectory() as folder:
        engine = _launch(Path(folder))
        try:
            medians = asyncio.run(_measure(args.rounds, args.workflows, args.at_once, engine))
        finally:
            DBOS.destroy()
            engine.dispose()
    report(args, medians)


if __name__ == "__main__":
    main()
