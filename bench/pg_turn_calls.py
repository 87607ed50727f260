"""What a turn's first read and its end cost a worker on PostgreSQL, in process: CPU per call.

A script, not in ``BENCHMARKS``: two checkouts compared by alternating runs, each in a
process of its own on one durable PostgreSQL server (``fsync`` on), each a session whose
200 turns each read their progress with their place marked started
(``SessionStore.turn_progress``) and end with three events, the last step's record, a
checkpoint and the place done (``append_events``, with ``accepted.PlaceEnds`` where the
checkout has it, a plain callable before); the medians of this process's CPU per
call after 20 warm-up turns. No contention, no other thread: what the calls' statements and
round trips cost the process itself (docs/postgres.md, *What bounds one worker at 1,000*).

``python -m bench.pg_turn_calls --rounds 4 CHECKOUT_A CHECKOUT_B``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TURNS = 200
WARMUP = 20


def measure(url: str, tag: str) -> dict[str, Any]:
    """In the checkout on ``PYTHONPATH``: CPU per start read and per end, medians (µs)."""
    from eve.sessions import accepted
    from eve.sessions import store as store_module
    from eve.sessions.step_records import NewRecord
    from eve.sessions.store import EventRow, SessionStore

    store = SessionStore(url)
    session = f"ses_{tag}_{time.time_ns()}"
    store.create_session(session)
    starts: list[float] = []
    ends: list[float] = []
    end_walls: list[float] = []
    for turn in range(TURNS):
        workflow = f"{session}:turn-{turn}"
        store.run(
            lambda c, t=turn, w=workflow: accepted.accept(
                c, session_id=session, turn=t, kind="turn", workflow_id=w
            )
        )
        at = time.process_time()
        store.turn_progress(
            workflow,
            records_of=workflow,
            checkpoint_of=session,
            log_of=session,
            cancel_of=workflow,
            also=_starts(accepted, workflow),
        )
        starts.append(time.process_time() - at)
        row = EventRow(workflow_id=workflow, body_seq=None, step_key="s", attempt=0, payload="{}")
        record = NewRecord(workflow_id=workflow, key="s", record="{}")

        end = _end(accepted, store_module, session, turn, workflow)
        at, wall = time.process_time(), time.perf_counter()
        store.append_events(session, 3 * turn, [row] * 3, [record, end])
        ends.append(time.process_time() - at)
        end_walls.append(time.perf_counter() - wall)
    store.close()
    return {
        "tag": tag,
        "start_us": round(1e6 * statistics.median(starts[WARMUP:])),
        "end_us": round(1e6 * statistics.median(ends[WARMUP:])),
        # the end's wall time: its round trips and its commit's flush, the process idle
        "end_wall_us": round(1e6 * statistics.median(end_walls[WARMUP:])),
    }


def _starts(accepted: Any, workflow: str) -> Any:
    # a checkout before ``PlaceStarts`` marked the place with a plain callable
    if hasattr(accepted, "PlaceStarts"):
        return accepted.PlaceStarts(workflow)
    return lambda c: accepted.mark_started(c, workflow)


def _end(accepted: Any, store: Any, session: str, turn: int, workflow: str) -> Any:
    """The turn's end: its checkpoint saved, its place done (as data where the checkout has
    ``PlaceEnds``, which the store sends as one call)."""
    data = f'{{"turns":{turn + 1}}}'
    if hasattr(accepted, "PlaceEnds"):
        save = store.CheckpointSave(
            session_id=session, version=turn + 1, data=data, saved_by=workflow
        )
        return accepted.PlaceEnds(session_id=session, workflow_id=workflow, save=save)

    def end(c: Any) -> Any:
        store.write_checkpoint(c, session, turn + 1, data, saved_by=workflow)
        return accepted.finish_and_next(c, session, workflow)

    return end


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("checkouts", nargs=2, type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    from tests.postgres import PostgresServer, find_bindir

    bindir = find_bindir()
    assert bindir is not None, "PostgreSQL's binaries (scripts/ensure-postgres)"
    server = PostgresServer.start(bindir, durable=True)
    try:
        url = server.database()
        for _ in range(args.rounds):
            for checkout in args.checkouts:
                ran = subprocess.run(
                    [sys.executable, __file__, "--one", url, str(checkout)],
                    env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"},
                    cwd=checkout,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                print(ran.stdout.strip(), flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(measure(sys.argv[2], sys.argv[3])))
    else:
        main()
