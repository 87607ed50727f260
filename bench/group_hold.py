"""How long a group of the turns' writes holds eve's SQLite file, in process.

The writer lane (``eve/sessions/writer_lane.py``) runs the turns' writes in groups, one
transaction each (``group_commit.run_together``); with two workers on one file the other
worker cannot write while a group holds it, so a hold's length is the pair's capacity. Here
the writes a turn makes in the scale benchmark (its body's first read with its place marked
started, three steps' events each with the step's record, the last events with the
checkpoint's save and the place's end) run on a store of eve's schema, several sessions'
turns interleaved, in groups of ``GROUP`` writes, and each group is timed from its
``BEGIN IMMEDIATE`` to the end of its commit (``hold``), with the CPU its thread spent
meanwhile (``cpu``). With ``--contend`` a thread beside the lane computes and sleeps in
turns, as a worker's event loop does, so the lane waits for the interpreter's lock back
after each call into SQLite (the hold a loaded worker sees); it is off for the quiet figure.
A round of its own counts the statements a group runs (SQLite's trace callback, untimed).

Run ``python -m bench.group_hold [--contend] [--rounds N]``: one JSON line of medians (ms a
group). Run it alternately from two checkouts to compare them (the figures in
docs/sessions.md were taken so).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._file_holds import time_group_holds
from eve.sessions import group_commit
from eve.sessions.accepted import PlaceEnds, PlaceStarts, accept
from eve.sessions.step_records import NewRecord
from eve.sessions.store import CheckpointSave, EventRow, SessionStore

#: writes in a group (a loaded worker's lane ran about 6 of at most 8)
GROUP = 6
#: sessions whose turns a round interleaves (their starts staggered over a turn's writes)
SESSIONS = 30
#: events a batch (a turn's 16 came in about four)
EVENTS = 4
#: the switch interval ``eve serve`` sets on SQLite (``eve/server/switching.py``)
SWITCH_SECONDS = 0.001
#: the contending thread's slices of computing and of sleeping
BUSY_SECONDS, IDLE_SECONDS = 0.0004, 0.0006

_PAYLOAD = json.dumps({"type": "step.delta", "data": {"text": "x" * 400}, "meta": {"id": "e"}})
_CHECKPOINT = json.dumps({"messages": [{"role": "user", "text": "y" * 200}] * 30})


def _rows(workflow: str, step: int) -> list[EventRow]:
    return [
        EventRow(
            workflow_id=workflow,
            body_seq=None,
            step_key=f"model:{step}",
            attempt=0,
            payload=_PAYLOAD,
        )
        for _ in range(EVENTS)
    ]


def _turn(store: SessionStore, session: str) -> list[Callable[[], Any]]:
    """The writes of one turn of ``session``, in the order the turn makes them."""
    workflow = f"{session}:turn-0"
    writes: list[Callable[[], Any]] = [
        lambda: store.turn_progress(
            workflow,
            records_of=workflow,
            checkpoint_of=session,
            log_of=session,
            cancel_of=workflow,
            also=PlaceStarts(workflow),
        )
    ]
    for step in range(3):
        record = NewRecord(workflow_id=workflow, key=f"model:{step}", record='{"ok": 1}')
        writes.append(
            lambda step=step, record=record: store.append_events(
                session, step * EVENTS, _rows(workflow, step), [record]
            )
        )
    save = CheckpointSave(session_id=session, version=1, data=_CHECKPOINT, saved_by=workflow)
    ends = PlaceEnds(session_id=session, workflow_id=workflow, save=save)
    writes.append(lambda: store.append_events(session, 3 * EVENTS, _rows(workflow, 3), [ends]))
    return writes


def _groups(store: SessionStore, prefix: str) -> list[list[Callable[[], Any]]]:
    """A round's writes: ``SESSIONS`` new sessions' turns, each session a write behind the
    one before (so a group mixes the writes of a turn's start, steps and end), in groups."""
    sessions = [f"{prefix}-{n}" for n in range(SESSIONS)]
    for session in sessions:
        store.create_session(session)
        store.run(
            lambda c, s=session: accept(
                c, session_id=s, turn=0, kind="turn", workflow_id=f"{s}:turn-0"
            )
        )
    turns = [_turn(store, session) for session in sessions]
    stream: list[Callable[[], Any]] = []
    length = len(turns[0])
    for tick in range(length + SESSIONS):
        for n, writes in enumerate(turns):
            if 0 <= tick - n < length:
                stream.append(writes[tick - n])
    return [stream[at : at + GROUP] for at in range(0, len(stream), GROUP)]


class _Holds:
    """Each group's hold (from its ``BEGIN IMMEDIATE`` to its commit's end) and its thread's
    CPU meanwhile (``bench/_file_holds.py``'s timing)."""

    def __init__(self) -> None:
        self.holds: list[float] = []
        self.cpu: list[float] = []
        _, self.undo = time_group_holds(self._held)

    def _held(self, seconds: float, cpu: float, _calls: object, _since: float) -> None:
        self.holds.append(seconds)
        self.cpu.append(cpu)


def _run(store: SessionStore, groups: list[list[Callable[[], Any]]]) -> None:
    for group in groups:
        calls = group
        while calls:
            outcomes = group_commit.run_together(store, calls)
            assert outcomes is not None, "a group broke"
            for outcome in outcomes:
                assert isinstance(outcome, group_commit.Returned), outcome
            calls = calls[len(outcomes) :]


def _statements(store: SessionStore, groups: list[list[Callable[[], Any]]]) -> Counter[str]:
    """The statements the groups ran, by their first two words (a round of its own)."""
    seen: Counter[str] = Counter()
    kept = group_commit._kept(store.engine).connection
    assert kept is not None
    raw = kept.connection.dbapi_connection
    assert raw is not None
    raw.set_trace_callback(lambda sql: seen.update([" ".join(sql.split()[:2])]))
    try:
        _run(store, groups)
    finally:
        raw.set_trace_callback(None)
    return seen


def _contend(stop: threading.Event) -> threading.Thread:
    def loop() -> None:
        while not stop.is_set():
            until = time.perf_counter() + BUSY_SECONDS
            while time.perf_counter() < until:
                pass
            time.sleep(IDLE_SECONDS)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def measure(rounds: int, *, contend: bool) -> dict[str, Any]:
    """Medians over ``rounds`` rounds of a group's hold and CPU (ms), and the statements a
    group ran (counted in a round of their own)."""
    sys.setswitchinterval(SWITCH_SECONDS)
    holds = _Holds()
    figures: list[tuple[float, float]] = []
    stop = threading.Event()
    try:
        with tempfile.TemporaryDirectory() as folder:
            store = SessionStore(f"sqlite:///{Path(folder) / 'eve.sqlite'}")
            _run(store, _groups(store, "warm"))  # compiles, caches, the kept connection
            counted = _groups(store, "count")
            statements = _statements(store, counted)
            contending = _contend(stop) if contend else None
            for n in range(rounds):
                groups = _groups(store, f"r{n}")
                holds.holds.clear()
                holds.cpu.clear()
                _run(store, groups)
                figures.append((statistics.median(holds.holds), statistics.median(holds.cpu)))
            stop.set()
            if contending is not None:
                contending.join()
            store.close()
    finally:
        stop.set()
        holds.undo()
    return {
        "contend": contend,
        "hold_ms_p50": round(statistics.median(f[0] for f in figures) * 1000, 3),
        "cpu_ms_p50": round(statistics.median(f[1] for f in figures) * 1000, 3),
        "statements_a_group": round(sum(statements.values()) / len(counted), 2),
        "by_kind": dict(statements.most_common()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--contend", action="store_true", help="a computing thread beside")
    args = parser.parse_args()
    print(json.dumps(measure(args.rounds, contend=args.contend)))


if __name__ == "__main__":
    main()
