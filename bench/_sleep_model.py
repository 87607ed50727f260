"""The scale benchmark's model, installed as an ``eve.plugins`` entry point in the server.

``benchsleep/<seconds>x<steps>`` (``benchsleep/2.0x3``) takes ``seconds`` per response, as a
remote model's latency would, and makes a turn of ``steps`` steps: each response before the
last asks for one call of the agent's ``noop`` tool, the last one answers. It costs the
server nothing while it waits, so what the server spends on a turn is eve's own. With a
spread (``benchsleep/2.0x3~0.25``) each response's latency is drawn around that mean
(``_sleep_latency.py``), keyed by the turn's message and the step.

The scale benchmark writes a dist-info naming this module into a directory on the server's
``PYTHONPATH`` (``bench/scale.py``), which is how ``pip install`` would provide it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._sleep_latency import PREFIX, SleepSpec, parse, turn_key
from eve.hooks import hookimpl
from eve.messages import AssistantMessage, UserMessage
from eve.models.base import ModelClient, ModelFactory, ModelRequest
from eve.models.events import ModelEvent
from eve.models.offline import respond

TOOL = "noop"
FINAL_TEXT = "done"


@dataclass(frozen=True, kw_only=True)
class SleepModel:
    spec: SleepSpec
    # formatted once: the loop reads it for each of a response's events
    model_id: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "model_id", self.spec.model_id)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        key, step = turn_and_step(request)
        await asyncio.sleep(self.spec.step_seconds(key, step))
        calls = [(f"call_{step}", TOOL, {})] if step < self.spec.steps - 1 else []
        async for event in respond(request, "" if calls else FINAL_TEXT, calls):
            yield event


def turn_and_step(request: ModelRequest) -> tuple[str, int]:
    """The turn's key (its user message's) and the assistant responses since that message:
    the step this request is."""
    taken = 0
    for message in reversed(request.messages):
        if isinstance(message, UserMessage):
            return turn_key(message.text), taken
        taken += isinstance(message, AssistantMessage)
    return "", taken


def build(name: str, *, env: Mapping[str, str], app_root: Path) -> ModelClient:
    return SleepModel(spec=parse(name))


_build: ModelFactory = build


@hookimpl
def eve_model_providers() -> dict[str, ModelFactory]:
    return {PREFIX: _build}


def _count_statements(path: str) -> None:
    """Count every SQL statement the server runs, by its first words, into ``path`` (every
    half second: a server stopped by a signal runs no exit hooks): the round trips a turn
    makes (``python -m bench.scale --sql-counts``; it costs CPU, so only in a run of its own).
    """
    import json
    import re
    import threading
    import time
    from collections import Counter

    import sqlalchemy as sa

    counts: Counter[str] = Counter()
    words = re.compile(r"\s+")

    def count(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        head = words.sub(" ", statement.strip())[:60]
        counts[head] += 1

    def commit(_conn: object) -> None:
        counts["COMMIT"] += 1

    def begin(conn: Any) -> None:
        # psycopg sends a transaction's BEGIN as a round trip of its own; none in autocommit
        # mode, though SQLAlchemy still begins its own transaction then
        if getattr(conn.connection.dbapi_connection, "autocommit", False) is not True:
            counts["BEGIN"] += 1

    _count_hand_offs(counts)

    def checkout(conn: Any) -> None:
        # a pool with ``pool_pre_ping`` sends ``SELECT 1`` at each checkout (no cursor event)
        if getattr(conn.engine.pool, "_pre_ping", False):
            counts["SELECT 1 (pool_pre_ping)"] += 1

    sa.event.listen(sa.engine.Engine, "engine_connect", checkout)
    sa.event.listen(sa.engine.Engine, "before_cursor_execute", count)
    sa.event.listen(sa.engine.Engine, "commit", commit)
    sa.event.listen(sa.engine.Engine, "begin", begin)

    def dump() -> None:
        while True:
            time.sleep(0.5)
            # written whole, then renamed: the benchmark reads it at any moment
            part = Path(path + ".part")
            part.write_text(json.dumps(counts.most_common()))
            part.replace(path)

    threading.Thread(target=dump, daemon=True, name="eve-bench-sql-counts").start()


def _count_hand_offs(counts: Any) -> None:
    """Count the calls the worker hands to a thread (``thread_lanes.LanedExecutor``), by
    the function called, as ``thread: <name>`` (each a hop from the loop to a thread and
    back: the GIL changes hands twice)."""
    import functools

    from eve.sessions import thread_lanes

    submit = thread_lanes.LanedExecutor.submit

    def counted(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        called = fn
        while isinstance(called, functools.partial):
            inner = called.args[0] if called.args and callable(called.args[0]) else None
            called = inner if inner is not None else called.func
        counts[f"thread: {getattr(called, '__qualname__', type(called).__name__)}"] += 1
        return submit(self, fn, *args, **kwargs)

    thread_lanes.LanedExecutor.submit = counted  # type: ignore[method-assign]


if _path := __import__("os").environ.get("EVE_BENCH_SQL_COUNTS"):
    _count_statements(_path)


def _lane_stats(path: str) -> None:
    """Every second, append to ``path`` the writer lane's busy time (wall and its thread's
    CPU), its writes and groups, the collector's time by generation, and the main thread's
    and the process's CPU (diagnostic)."""
    import gc
    import json
    import os
    import threading
    import time

    from eve.sessions import writer_lane

    stats: dict[str, Any] = {"busy": 0.0, "cpu": 0.0, "runs": 0}
    run = writer_lane.WriterLane._run

    def timed(self: Any, taken: Any) -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            run(self, taken)
        finally:
            stats["busy"] += time.perf_counter() - wall
            stats["cpu"] += time.thread_time() - cpu
            stats["runs"] += 1
            stats["ran"] = self.ran
            stats["groups"] = dict(self.groups)

    writer_lane.WriterLane._run = timed  # type: ignore[method-assign]
    _time_loop_groups(stats)
    collecting: dict[str, float] = {}

    def collected(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collecting["at"] = time.perf_counter()
            collecting["cpu"] = time.thread_time()
            return
        name = f"gc{info['generation']}"
        stats[name] = stats.get(name, 0.0) + time.perf_counter() - collecting.get("at", 0.0)
        # the collecting thread's CPU: the wall time includes the cores shared with clients
        stats[name + "_cpu"] = (
            stats.get(name + "_cpu", 0.0) + time.thread_time() - collecting.get("cpu", 0.0)
        )
        stats[name + "_n"] = stats.get(name + "_n", 0) + 1
        stats[name + "_freed"] = stats.get(name + "_freed", 0) + info["collected"]

    gc.callbacks.append(collected)
    _time_lane_waits(stats)
    tick = os.sysconf("SC_CLK_TCK")

    def cpu_of(where: str) -> float:
        fields = Path(where).read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / tick

    def dump() -> None:
        pid = os.getpid()
        with open(path, "a") as out:
            while True:
                time.sleep(1.0)
                row = dict(
                    stats, t=time.time(), pid=pid, main_cpu=cpu_of(f"/proc/{pid}/task/{pid}/stat")
                )
                row["proc_cpu"] = cpu_of(f"/proc/{pid}/stat")
                out.write(json.dumps(row) + "\n")
                out.flush()

    threading.Thread(target=dump, daemon=True, name="eve-bench-lane-stats").start()


def _time_loop_groups(stats: dict[str, Any]) -> None:
    """The event loop's tries at the turns' writes (``loop_writes.py``): their wall time and
    the loop thread's CPU in them (``loop_busy``, ``loop_cpu``), the writes committed there,
    the groups by their writes, the writes given to the lane by why and the tries that did
    not run by why (``loop_ran``, ``loop_groups``, ``loop_handed``, ``loop_not_now``)."""
    import time

    from eve.sessions import loop_writes

    step = loop_writes.LoopWrites._step

    def timed(self: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return step(self)
        finally:
            stats["loop_busy"] = stats.get("loop_busy", 0.0) + time.perf_counter() - wall
            stats["loop_cpu"] = stats.get("loop_cpu", 0.0) + time.thread_time() - cpu
            stats["loop_ran"], stats["loop_handed"] = self.ran, dict(self.handed)
            stats["loop_groups"], stats["loop_not_now"] = dict(self.groups), dict(self.not_now)

    loop_writes.LoopWrites._step = timed  # type: ignore[method-assign]


def _time_lane_waits(stats: dict[str, Any]) -> None:
    """In the writer lane's thread: the wall time its statements took (the interpreter's
    lock taken back after each included), its waits at the gate and for SQLite's lock, and
    its commits (``stmt``, ``gate``, ``begin``, ``commit``, seconds)."""
    import threading
    import time

    import sqlalchemy as sa

    from eve.sessions import group_commit, sqlite_gate

    started: dict[int, float] = {}

    def lane() -> bool:
        return threading.current_thread().name == "eve-writer"

    def before(_c: Any, cursor: Any, *_args: Any) -> None:
        if lane():
            started[id(cursor)] = time.perf_counter()

    def after(_c: Any, cursor: Any, *_args: Any) -> None:
        if (at := started.pop(id(cursor), None)) is not None:
            stats["stmt"] = stats.get("stmt", 0.0) + time.perf_counter() - at
            stats["stmts"] = stats.get("stmts", 0) + 1

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", before)
    sa.event.listen(sa.engine.Engine, "after_cursor_execute", after)

    def timing(name: str, call: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if not lane():
                return call(*args, **kwargs)
            at = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                stats[name] = stats.get(name, 0.0) + time.perf_counter() - at

        return timed

    gate = sqlite_gate.SqliteGate
    gate._acquire = timing("gate", gate._acquire)  # type: ignore[method-assign]
    for module in (group_commit, sqlite_gate):
        setattr(module, "take_write_lock", timing("begin", sqlite_gate.take_write_lock))  # noqa: B010
    transaction = sa.engine.base.Transaction
    transaction.commit = timing("commit", transaction.commit)  # type: ignore[method-assign]


if _lane_path := __import__("os").environ.get("EVE_BENCH_LANE_STATS"):
    _lane_stats(_lane_path)


def _survey_collector(path: str, every: int = 25) -> None:
    """Every ``every``-th collection of the middle generation, append to ``path`` what it
    walks: the young objects by type, the referents their traversal visits by type, the
    largest young containers, and (from the oldest generation's tail once it ends) what
    survived it by type, and where (``tracemalloc``, on from the start) the young objects were
    made. A diagnostic: it slows the whole server, and a collection that looks much more."""
    import gc
    import json
    import tracemalloc
    from collections import Counter

    # where each young object was made: its innermost frame, and its innermost of eve's
    tracemalloc.start(16)
    seen = {"n": 0}
    pending: dict[str, Any] = {}

    def made_at(obj: object) -> tuple[str, str]:
        trace = tracemalloc.get_object_traceback(obj)
        if trace is None:
            return "?", "?"
        frames = [f"{f.filename.rpartition('site-packages/')[2]}:{f.lineno}" for f in trace]
        ours = next((f for f in reversed(frames) if f.startswith("eve/") or "/eve/" in f), "-")
        return frames[-1], ours

    def name(obj: object) -> str:
        kind = type(obj)
        return f"{kind.__module__}.{kind.__qualname__}"

    def survey(phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 1:
            return
        if phase == "start":
            seen["n"] += 1
            if seen["n"] % every:
                return
            young = gc.get_objects(0) + gc.get_objects(1)
            kinds: Counter[str] = Counter()
            visits: Counter[str] = Counter()
            large: list[tuple[int, str]] = []
            sites: Counter[str] = Counter()
            eve_sites: Counter[str] = Counter()
            for obj in young:
                kind = name(obj)
                kinds[kind] += 1
                site, ours = made_at(obj)
                sites[f"{kind} {site}"] += 1
                eve_sites[ours] += 1
                referents = len(gc.get_referents(obj))
                visits[kind] += referents
                if referents >= 200:
                    large.append((referents, kind))
            pending.update(
                young=len(young),
                kinds=kinds.most_common(40),
                visits=visits.most_common(40),
                visited=sum(visits.values()),
                large=sorted(large, reverse=True)[:30],
                sites=sites.most_common(60),
                eve_sites=eve_sites.most_common(60),
            )
            return
        if not pending:
            return
        survivors = pending["young"] - info["collected"]
        oldest = gc.get_objects(2)
        tail = oldest[max(0, len(oldest) - survivors) :]
        pending.update(
            collected=info["collected"],
            survivors=survivors,
            oldest=len(oldest),
            survived=Counter(name(o) for o in tail).most_common(40),
        )
        with open(path, "a") as out:
            out.write(json.dumps(pending) + "\n")
        pending.clear()

    gc.callbacks.append(survey)


if _survey_path := __import__("os").environ.get("EVE_BENCH_GC_SURVEY"):
    _survey_collector(_survey_path)


if _claims_path := __import__("os").environ.get("EVE_BENCH_PG_CLAIMS"):
    from bench._pg_claim_stats import pg_claim_stats

    pg_claim_stats(_claims_path)


if _turns_path := __import__("os").environ.get("EVE_BENCH_PG_TURNS"):
    from bench._pg_turn_stats import pg_turn_stats

    pg_turn_stats(_turns_path)


if _stalls_path := __import__("os").environ.get("EVE_BENCH_STALLS"):
    from bench._stalls import stall_log

    stall_log(_stalls_path)


if _holds_path := __import__("os").environ.get("EVE_BENCH_FILE_HOLDS"):
    from bench._file_holds import file_holds

    file_holds(_holds_path)


if __import__("os").environ.get("EVE_BENCH_POST_WALL"):
    from bench._post_wall import post_wall

    post_wall()


if _stages_path := __import__("os").environ.get("EVE_BENCH_TURN_STAGES"):
    from bench._turn_stages import turn_stages

    turn_stages(_stages_path, SleepModel, turn_and_step)


if _sched_path := __import__("os").environ.get("EVE_BENCH_THREAD_SCHED"):
    from bench._thread_sched import count_turns, thread_sched

    thread_sched(_sched_path, turns=count_turns(SleepModel, turn_and_step))
