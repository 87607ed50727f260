"""``EVE_BENCH_FILE_HOLDS=FILE`` (a server setting, through ``--server-env``): where a
message's claim on eve's SQLite file waits when several workers share it. Each worker appends
to ``FILE`` one JSON line a second: its writer lane's groups (the wait for the file's lock,
``take_write_lock``, and the hold from that lock to the group's end, in ms), its claims on
the event loop (each try, and each claim from its first try to its end, with where it ended),
its claims in a thread (their whole time, and their wait at this process's gate), and
every wait for eve's gate and hold of it by the role of the thread (``gate_wait_<role>``,
``gate_hold_<role>``), and each of the file's hand-overs: every lane's wait and hold and
every claim's hold on the loop as an interval of the machine's monotonic clock (``iv``), so
that the summary can tell how long eve's file lay free while a worker waited for it
(``handovers``). ``python -m bench._file_holds FILE`` sums a run's lines up. A diagnostic:
it times every group and claim.
"""

from __future__ import annotations

import bisect
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


#: the intervals of a hand-over (``iv``): a lane's wait for the file (from its
#: transaction's begin to its ``BEGIN IMMEDIATE``), its hold (from there to its
#: group's end), a claim's hold on the loop, a background transaction's wait for another's
#: claim (``wait_for_requests``)
_SPANS = ("lane_wait", "lane_hold", "claim_hold", "flag_wait")


class _Notes:
    """The samples of the second under way, by kind (ms), the hand-overs' intervals, and a
    thread's marks."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = defaultdict(list)
        self.spans: list[tuple[str, float, float]] = []
        self.lock = threading.Lock()
        self.local = threading.local()

    def note(self, kind: str, since: float) -> None:
        self.value(kind, (time.perf_counter() - since) * 1000)

    def value(self, kind: str, value: float) -> None:
        with self.lock:
            self.samples[kind].append(round(value, 3))

    def span(self, kind: str, since: float) -> None:
        """An interval of ``kind`` from ``since`` to now (``time.monotonic``: one clock for
        every process of the machine)."""
        with self.lock:
            self.spans.append((kind, round(since, 6), round(time.monotonic(), 6)))

    def taken(self) -> dict[str, Any]:
        with self.lock:
            row: dict[str, Any] = dict(self.samples)
            self.samples.clear()
            if self.spans:
                row["iv"], self.spans = self.spans, []
        return row


def file_holds(path: str) -> None:
    """Time the writer lane's holds and the claims' waits to ``path``, a line a second."""
    notes = _Notes()
    _time_lane(notes)
    _time_loop_claims(notes)
    _time_thread_claims(notes)
    from eve.sessions import sqlite_gate

    _time_flag_waits(sqlite_gate, notes.note, notes.span)
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
    held: Callable[[float, float, Sequence[Any], float], None],
    waited: Callable[[float, float], None] = lambda _seconds, _since: None,
) -> tuple[threading.local, Callable[[], None]]:
    """Time each group of the writer lane (a ``SharedTransaction`` of ``run_together``'s,
    ``group_commit``): ``waited(seconds, since)`` after its wait for the file's lock (from the
    transaction's begin to its ``BEGIN IMMEDIATE``), ``held(seconds, cpu_seconds, calls,
    since)`` after its hold, from there to its commit's end, with the thread's CPU meanwhile
    and its writes; ``since`` is when each began on ``time.monotonic`` (one clock for every
    process of the machine). A thread-local whose ``holding`` is true while a group holds the
    file and whose ``locked_mono`` is when any transaction (a claim's too) last had the
    file's lock, and what puts ``group_commit``'s functions back."""
    from eve.sessions import group_commit

    begin, committed = group_commit.SharedTransaction.begin, group_commit._committed
    local = threading.local()

    def timed_begin(self: Any, *, patience: float) -> None:
        at, since = time.perf_counter(), time.monotonic()
        begin(self, patience=patience)
        local.locked, local.locked_mono = time.perf_counter(), time.monotonic()
        # (code before ``lanes`` was marked: the lane is the one writer not on the loop's thread)
        if getattr(self, "lanes", threading.current_thread() is not threading.main_thread()):
            waited(local.locked - at, since)
            local.cpu = time.thread_time()
            local.holding = True

    def timed_committed(*args: Any, **kwargs: Any) -> Any:
        local.locked = None
        try:
            return committed(*args, **kwargs)
        finally:
            local.holding = False
            if local.locked is not None:
                cpu = time.thread_time() - local.cpu
                held(time.perf_counter() - local.locked, cpu, args[1], local.locked_mono)

    def undo() -> None:
        group_commit.SharedTransaction.begin = begin  # type: ignore[method-assign]
        setattr(group_commit, "_committed", committed)  # noqa: B010

    group_commit.SharedTransaction.begin = timed_begin  # type: ignore[method-assign]
    setattr(group_commit, "_committed", timed_committed)  # noqa: B010
    return local, undo


def _time_lane(notes: _Notes) -> None:
    """A group's wait for the file (``lane_wait``) and its hold (``lane_hold``, from its
    ``BEGIN IMMEDIATE`` to its commit's end), each also as an interval for the hand-overs,
    and of the hold: the lane thread's CPU (``lane_hold_cpu``, ms: the rest of the hold it
    waited, mostly for the interpreter's lock back after SQLite's calls), the statements
    SQLAlchemy's listeners saw it run (``lane_hold_stmts``: ``BEGIN`` and ``COMMIT`` not
    counted) and its writes (``lane_group_writes``); a claim's hold on the loop as an
    interval (``claim_hold``)."""
    import sqlalchemy as sa

    from eve.sessions import claim_now

    counted = [0]

    def held(seconds: float, cpu: float, calls: Sequence[Any], since: float) -> None:
        notes.value("lane_hold", seconds * 1000)
        notes.span("lane_hold", since)
        notes.value("lane_hold_cpu", cpu * 1000)
        notes.value("lane_hold_stmts", counted[0])
        notes.value("lane_group_writes", len(calls))
        counted[0] = 0

    def waited(seconds: float, since: float) -> None:
        notes.value("lane_wait", seconds * 1000)
        notes.span("lane_wait", since)

    local, _ = time_group_holds(held, waited)

    def count(*_args: Any) -> None:
        if getattr(local, "holding", False):
            counted[0] += 1

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", count)
    claim = claim_now.LoopClaims._claim

    def timed_claim(self: Any, *args: Any, **kwargs: Any) -> Any:
        local.locked = None
        try:
            return claim(self, *args, **kwargs)
        finally:
            if local.locked is not None:
                notes.span("claim_hold", local.locked_mono)

    claim_now.LoopClaims._claim = timed_claim  # type: ignore[method-assign]


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


#: a wait shorter than this (seconds) found nothing to wait for: no interval of it is kept
_WAITED = 0.00005


def _time_flag_waits(sqlite_gate: Any, note: Any, span: Any) -> None:
    """A background transaction's wait for another's request (``wait_for_requests``), where
    the gate has one."""
    wait = getattr(sqlite_gate, "wait_for_requests", None)
    if wait is None:
        return

    def timed(*args: Any, **kwargs: Any) -> Any:
        at, since = time.perf_counter(), time.monotonic()
        try:
            return wait(*args, **kwargs)
        finally:
            note("flag_wait", at)
            if time.perf_counter() - at > _WAITED:
                span("flag_wait", since)

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
    second past ``until`` (wall clock: a run's ``window_wall`` in ``results/scale.json``),
    and the file's hand-overs there (``handovers``)."""
    with open(path) as lines:
        rows = [json.loads(line) for line in lines]
    kept = [row for row in rows if since < row["t"] <= until + 1.0]
    out: dict[str, Any] = {}
    extra = sorted({kind for row in kept for kind in row} - {*_KINDS, "pid", "t", "iv"})
    for kind in (*_KINDS, *extra):
        values = [v for row in kept for v in row.get(kind, [])]
        if values:
            out[kind] = _figures(values)
    spans = [(row["pid"], *span) for row in kept for span in row.get("iv", [])]
    if spans:
        out["handovers"] = handovers(spans, seconds=until - since + 1.0)
    return out


def _figures(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": _percentile(values, 0.5),
        "p95": _percentile(values, 0.95),
        "p99": _percentile(values, 0.99),
        "mean": round(sum(values) / len(values), 3),
        "sum_s": round(sum(values) / 1000, 2),
    }


Span = tuple[int, str, float, float]


def handovers(spans: list[Span], *, seconds: float) -> dict[str, Any]:
    """How long eve's file lay free while a worker waited for it, from the intervals of
    every worker (``pid``, kind, start, end; ``_SPANS``): a lane's wait that overlapped
    another worker's hold (a hand-over) ended ``gap`` after the last such hold ended
    (``gap_ms``: p50, p95, and the sum a second of those above 0: a holder notes its end
    after its commit returned, and the waiter may have the file first); the file free
    while a lane waited for it (``free_lane_wait_s``) or while a background transaction
    waited for another's claim (``free_flag_wait_s``), seconds a second; the logged holds'
    share of the wall time (``held_s``, every worker's lanes and loop claims: a request
    thread's write is not logged). A wait no logged hold of another worker overlapped
    (``unexplained``) waited for a writer that is not logged."""
    holds = sorted(
        (start, end, pid) for pid, kind, start, end in spans if kind in ("lane_hold", "claim_hold")
    )
    starts = [start for start, _end, _pid in holds]
    gaps: list[float] = []
    unexplained = 0
    for pid, kind, start, end in spans:
        if kind != "lane_wait" or end - start < _WAITED:
            continue
        last = None
        at = bisect.bisect_left(starts, end) - 1
        # (each worker's holds follow one another: a few back reach any that overlaps)
        for held_from, held_to, holder in reversed(holds[max(0, at - 8) : at + 1]):
            if holder != pid and held_to > start and held_from < end:
                last = held_to if last is None else max(last, held_to)
        if last is None:
            unexplained += 1
        else:
            gaps.append(round((end - last) * 1000, 3))
    held = _merged([(start, end) for start, end, _pid in holds])
    out: dict[str, Any] = {
        "waits": sum(kind == "lane_wait" for _pid, kind, _s, _e in spans),
        "handovers_per_s": round(len(gaps) / seconds, 1),
        "unexplained_per_s": round(unexplained / seconds, 1),
        "held_s": round(_measure(held) / seconds, 3),
    }
    if gaps:
        positive = sum(gap for gap in gaps if gap > 0)
        out["gap_ms"] = _figures(gaps) | {"sum_s": round(positive / 1000 / seconds, 3)}
    for kind in ("lane_wait", "flag_wait"):
        waits = _merged([(start, end) for _pid, k, start, end in spans if k == kind])
        free = _measure(waits) - _measure(_overlap(waits, held))
        out[f"free_{kind}_s"] = round(free / seconds, 3)
    return out


def _merged(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """``intervals`` as the fewest disjoint ones that cover the same time, in order."""
    out: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _overlap(
    first: list[tuple[float, float]], second: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    """Where two lists of disjoint, ordered intervals overlap."""
    out: list[tuple[float, float]] = []
    i = j = 0
    while i < len(first) and j < len(second):
        start, end = max(first[i][0], second[j][0]), min(first[i][1], second[j][1])
        if start < end:
            out.append((start, end))
        if first[i][1] < second[j][1]:
            i += 1
        else:
            j += 1
    return out


def _measure(intervals: list[tuple[float, float]]) -> float:
    return sum(end - start for start, end in intervals)


if __name__ == "__main__":
    for kind, figures in summary(sys.argv[1], float(sys.argv[2]), float(sys.argv[3])).items():
        print(f"{kind:14} {figures}")
