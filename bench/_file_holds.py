"""``EVE_BENCH_FILE_HOLDS=FILE`` (a server setting, through ``--server-env``): where a
message's claim on eve's SQLite file waits when several workers share it. Each worker appends
to ``FILE`` one JSON line a second: its writer lane's groups (the wait for the file's lock,
``take_write_lock``, and the hold from that lock to the group's end, in ms), its claims on
the event loop (each try, and each claim from its first try to its end, with where it ended),
its claims in a thread (their whole time, and their wait at this process's gate), and
every wait for eve's gate and hold of it by the role of the thread (``gate_wait_<role>``,
``gate_hold_<role>``).
``python -m bench._file_holds FILE`` sums a run's lines up. A diagnostic: it times every
group and claim.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

_KINDS = (
    "lane_wait",
    "lane_hold",
    "lane_hold_cpu",
    "lane_hold_stmts",
    "lane_group_writes",
    "loop_try",
    "loop_claim",
    "loop_gave_up",
    "loop_gate_miss",
    "thread_claim",
    "thread_gate",
    "flag_wait",
)


class _Notes:
    """The samples of the second under way, by kind (ms), and a thread's marks."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = defaultdict(list)
        self.lock = threading.Lock()
        self.local = threading.local()

    def note(self, kind: str, since: float) -> None:
        self.value(kind, (time.perf_counter() - since) * 1000)

    def value(self, kind: str, value: float) -> None:
        with self.lock:
            self.samples[kind].append(round(value, 3))

    def taken(self) -> dict[str, list[float]]:
        with self.lock:
            row = dict(self.samples)
            self.samples.clear()
        return row


def file_holds(path: str) -> None:
    """Time the writer lane's holds and the claims' waits to ``path``, a line a second."""
    notes = _Notes()
    _time_lane(notes)
    _time_loop_claims(notes)
    _time_thread_claims(notes)
    from eve.sessions import sqlite_gate

    _time_flag_waits(sqlite_gate, notes.note)
    _time_gate_by_role(sqlite_gate, notes)

    def dump() -> None:
        pid = os.getpid()
        with open(path, "a") as out:
            while True:
                time.sleep(1.0)
                out.write(json.dumps({"pid": pid, "t": time.time()} | notes.taken()) + "\n")
                out.flush()

    threading.Thread(target=dump, daemon=True, name="eve-bench-file-holds").start()


def time_group_holds(
    held: Callable[[float, float, Sequence[Any]], None],
    waited: Callable[[float], None] = lambda _seconds: None,
) -> tuple[threading.local, Callable[[], None]]:
    """Time each group of the writer lane (``group_commit``): ``waited(seconds)`` after its
    wait for the file's lock, ``held(seconds, cpu_seconds, calls)`` after its hold, from its
    ``BEGIN IMMEDIATE`` to its commit's end, with the thread's CPU meanwhile and its writes.
    A thread-local whose ``holding`` is true while a group holds the file, and what puts
    ``group_commit``'s functions back."""
    from eve.sessions import group_commit, sqlite_gate

    take, committed, local = sqlite_gate.take_write_lock, group_commit._committed, threading.local()

    def timed_take(raw: Any, *, patience: float) -> None:
        at = time.perf_counter()
        take(raw, patience=patience)
        waited(time.perf_counter() - at)
        local.cpu = time.thread_time()
        local.locked = time.perf_counter()
        local.holding = True

    def timed_committed(*args: Any, **kwargs: Any) -> Any:
        local.locked = None
        try:
            return committed(*args, **kwargs)
        finally:
            local.holding = False
            if local.locked is not None:
                cpu = time.thread_time() - local.cpu
                held(time.perf_counter() - local.locked, cpu, args[1])

    def undo() -> None:
        setattr(group_commit, "take_write_lock", take)  # noqa: B010
        setattr(group_commit, "_committed", committed)  # noqa: B010

    setattr(group_commit, "take_write_lock", timed_take)  # noqa: B010
    setattr(group_commit, "_committed", timed_committed)  # noqa: B010
    return local, undo


def _time_lane(notes: _Notes) -> None:
    """A group's wait for the file (``lane_wait``) and its hold (``lane_hold``, from its
    ``BEGIN IMMEDIATE`` to its commit's end), and of the hold: the lane thread's CPU
    (``lane_hold_cpu``, ms: the rest of the hold it waited, mostly for the interpreter's
    lock back after SQLite's calls), the statements SQLAlchemy's listeners saw it run
    (``lane_hold_stmts``: ``BEGIN`` and ``COMMIT`` not counted) and its writes
    (``lane_group_writes``)."""
    import sqlalchemy as sa

    counted = [0]

    def held(seconds: float, cpu: float, calls: Sequence[Any]) -> None:
        notes.value("lane_hold", seconds * 1000)
        notes.value("lane_hold_cpu", cpu * 1000)
        notes.value("lane_hold_stmts", counted[0])
        notes.value("lane_group_writes", len(calls))
        counted[0] = 0

    holding, _ = time_group_holds(held, lambda seconds: notes.value("lane_wait", seconds * 1000))

    def count(*_args: Any) -> None:
        if getattr(holding, "holding", False):
            counted[0] += 1

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", count)


def _time_loop_claims(notes: _Notes) -> None:
    from eve.sessions import claim_now

    claim, claim_soon = claim_now.LoopClaims.claim, claim_now.LoopClaims.claim_soon

    def timed_claim(self: Any, *args: Any, **kwargs: Any) -> Any:
        at = time.perf_counter()
        try:
            return claim(self, *args, **kwargs)
        finally:
            notes.note("loop_try", at)

    async def timed_soon(self: Any, *args: Any, **kwargs: Any) -> Any:
        at = time.perf_counter()
        found = await claim_soon(self, *args, **kwargs)
        notes.note("loop_gave_up" if found is claim_now.NOT_NOW else "loop_claim", at)
        return found

    claim_now.LoopClaims.claim = timed_claim  # type: ignore[method-assign]
    claim_now.LoopClaims.claim_soon = timed_soon  # type: ignore[method-assign]
    _count_gate_misses(notes)


def _count_gate_misses(notes: _Notes) -> None:
    """A try on the loop that did not have the gate in time (``loop_gate_miss``, its wait):
    the other tries that left a claim ``NOT_NOW`` found the file held by another process."""
    from eve.sessions import sqlite_gate

    held_within = sqlite_gate.SqliteGate.held_within

    @contextlib.contextmanager
    def timed(self: Any, patience: float) -> Iterator[bool]:
        at = time.perf_counter()
        with held_within(self, patience) as free:
            if not free:
                notes.note("loop_gate_miss", at)
            yield free

    sqlite_gate.SqliteGate.held_within = timed  # type: ignore[method-assign]


def _time_thread_claims(notes: _Notes) -> None:
    from eve.sessions import sqlite_gate, store

    claim_turn, acquire, local = (
        store.SessionStore.claim_turn,
        sqlite_gate.SqliteGate._acquire,
        notes.local,
    )

    def timed_turn(self: Any, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            return claim_turn(self, *args, **kwargs)  # the loop's (``_time_loop_claims``)
        local.claiming = time.perf_counter()
        try:
            return claim_turn(self, *args, **kwargs)
        finally:
            notes.note("thread_claim", local.claiming)
            local.claiming = None

    def timed_acquire(self: Any, *args: Any, **kwargs: Any) -> Any:
        at = time.perf_counter()
        try:
            return acquire(self, *args, **kwargs)
        finally:
            if getattr(local, "claiming", None) is not None:
                notes.note("thread_gate", at)

    store.SessionStore.claim_turn = timed_turn  # type: ignore[method-assign]
    sqlite_gate.SqliteGate._acquire = timed_acquire  # type: ignore[method-assign]


def _time_flag_waits(sqlite_gate: Any, note: Any) -> None:
    """A background transaction's wait for another's request (``wait_for_requests``), where
    the gate has one."""
    wait = getattr(sqlite_gate, "wait_for_requests", None)
    if wait is None:
        return

    def timed(*args: Any, **kwargs: Any) -> Any:
        at = time.perf_counter()
        try:
            return wait(*args, **kwargs)
        finally:
            note("flag_wait", at)

    sqlite_gate.wait_for_requests = timed


#: a thread's role by its name's start (``thread_lanes.py``, ``writer_lane.py``)
_ROLES = (("eve-writer", "lane"), ("eve-read", "read"), ("eve-request", "request"))


def _role() -> str:
    thread = threading.current_thread()
    if thread is threading.main_thread():
        return "loop"
    role = next((role for start, role in _ROLES if thread.name.startswith(start)), None)
    return role if role is not None else f"other_{thread.name.rstrip('_0123456789')}_{_caller()}"


#: frames skipped when naming what took the gate in another thread
_PLUMBING = ("sqlite_gate.py", "contextlib.py", "_file_holds.py", "db_retry.py", "store_lanes.py")


def _caller() -> str:
    """The first function above the gate's plumbing and the store's transactions."""
    frame = sys._getframe(2)
    while frame is not None and (
        frame.f_code.co_filename.endswith(_PLUMBING)
        or frame.f_code.co_name in ("_tx", "_single", "_read", "run", "read")
    ):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "?"
    return f"{os.path.basename(frame.f_code.co_filename)[:-3]}.{frame.f_code.co_name}"


def _time_gate_by_role(sqlite_gate: Any, notes: _Notes) -> None:
    """Each wait for eve's gate and each hold of it, by the role of the thread (the writer
    lane, a read's thread, a request's, the loop, other): ``gate_wait_<role>`` and
    ``gate_hold_<role>``. Eve's gate is the one with a signal (DBOS's has none)."""
    gate_class = sqlite_gate.SqliteGate
    acquire, release, local = gate_class._acquire, gate_class._release, threading.local()

    def timed_acquire(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.signal is None or self._holder == threading.get_ident():
            return acquire(self, *args, **kwargs)
        at, role = time.perf_counter(), _role()
        taken = acquire(self, *args, **kwargs)
        notes.note(f"gate_wait_{role}", at)
        if taken:
            local.held, local.role = time.perf_counter(), role
        return taken

    def timed_release(self: Any) -> None:
        ends = self._depth == 1  # (this thread holds it: no other changes it meanwhile)
        release(self)
        if self.signal is not None and ends and getattr(local, "held", None):
            notes.note(f"gate_hold_{local.role}", local.held)
            local.held = None

    gate_class._acquire = timed_acquire
    gate_class._release = timed_release


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def summary(path: str, since: float, until: float) -> dict[str, Any]:
    """Each kind's count, p50, p95 and p99 (ms) over the lines written from ``since`` to a
    second past ``until`` (wall clock: a run's ``window_wall`` in ``results/scale.json``)."""
    with open(path) as lines:
        rows = [json.loads(line) for line in lines]
    kept = [row for row in rows if since < row["t"] <= until + 1.0]
    out: dict[str, Any] = {}
    extra = sorted({kind for row in kept for kind in row} - {*_KINDS, "pid", "t"})
    for kind in (*_KINDS, *extra):
        values = [v for row in kept for v in row.get(kind, [])]
        if values:
            out[kind] = {
                "n": len(values),
                "p50": _percentile(values, 0.5),
                "p95": _percentile(values, 0.95),
                "p99": _percentile(values, 0.99),
                "mean": round(sum(values) / len(values), 3),
                "sum_s": round(sum(values) / 1000, 2),
            }
    return out


if __name__ == "__main__":
    for kind, figures in summary(sys.argv[1], float(sys.argv[2]), float(sys.argv[3])).items():
        print(f"{kind:14} {figures}")
