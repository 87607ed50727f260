"""The measuring side of ``bench.durability``: one configuration per process.

DBOS is a process-wide singleton, so ``bench.durability`` runs every configuration in a
fresh interpreter: ``python -m bench._durability_worker --config durable --out FILE``. The
worker writes raw timings (seconds) as JSON to ``FILE``; the parent turns them into
medians, slopes and tables. PostgreSQL comes in through ``EVE_DATABASE_URL``, which the
parent sets once it has started a throwaway server; without it the session service uses
its embedded SQLite files under a temporary app root.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import inspect
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench._add_tool import FINAL_TEXT, Tally, add_or_finish, add_tool

#: steps in the long and the short turn; the per-step cost is the slope between them
LONG, SHORT = 20, 1
SYSTEM = "You add numbers."
_STEPS = re.compile(r"steps=(\d+)")


@dataclass
class Agent:
    setup: Any
    tally: Tally
    model: Any

    def reset(self) -> None:
        self.tally.calls = 0
        self.model.requests.clear()  # FunctionModel keeps every request it served


def build_agent(workspace: Path) -> Agent:
    """An ``AgentSetup`` with one sync ``add`` tool and an instant scripted model.

    The user message says how many steps the turn has (``steps=20``): each step is one
    model response asking for one ``add`` call (so, durably, one DBOS step: the model
    response and the tool run), then one more model response, a final text, ends the turn.
    """
    from eve.execution.setup import AgentSetup
    from eve.manifest import AgentConfig
    from eve.messages import AssistantMessage, UserMessage
    from eve.models.base import ModelRequest
    from eve.models.events import ModelEvent
    from eve.models.function import FunctionModel
    from eve.runtime import ResolvedAgent

    tally = Tally()

    def respond(request: ModelRequest) -> list[ModelEvent]:
        users = [i for i, m in enumerate(request.messages) if isinstance(m, UserMessage)]
        user = request.messages[users[-1]]
        match = _STEPS.search(user.text) if isinstance(user, UserMessage) else None
        steps = int(match.group(1)) if match else 0
        step = sum(isinstance(m, AssistantMessage) for m in request.messages[users[-1] :])
        events: list[ModelEvent] = add_or_finish(step, steps)
        return events

    model = FunctionModel(respond)
    agent = ResolvedAgent(
        node_id="__root__", config=AgentConfig(), instructions=SYSTEM, tools=[add_tool(tally)]
    )
    setup = AgentSetup(
        agent=agent,
        client=model,
        max_turns=LONG + 5,
        workspace=workspace,
        context_budget_tokens=None,
        fingerprint="bench-durability-0000",
    )
    return Agent(setup=setup, tally=tally, model=model)


def message(steps: int) -> str:
    return f"steps={steps}"


def _check(calls: int, steps: int, final: str | None) -> None:
    if calls != steps or final != FINAL_TEXT:
        raise AssertionError(
            f"{calls} tool calls and final {final!r}; expected {steps} and {FINAL_TEXT!r}"
        )


def _orders(repeats: int) -> Iterator[int]:
    """Long and short turns interleaved, alternating which goes first."""
    for repeat in range(repeats):
        yield from (SHORT, LONG) if repeat % 2 else (LONG, SHORT)


async def _timed_turns(
    turn: Callable[[int], Awaitable[float]], repeats: int, warmup: int
) -> dict[str, Any]:
    """``{"turns": ...}`` of a configuration whose turn is all body: ``turn(steps)`` seconds."""
    for steps in _orders(warmup):
        await turn(steps)
    samples: dict[str, list[dict[str, float]]] = {str(SHORT): [], str(LONG): []}
    for steps in _orders(repeats):
        seconds = await turn(steps)
        samples[str(steps)].append({"total": seconds, "body": seconds})
    return {"turns": samples}


# --- in memory --------------------------------------------------------------------------


async def _in_memory(agent: Agent, repeats: int, warmup: int) -> dict[str, Any]:
    from eve.execution.loop import run_agent

    setup = agent.setup

    async def turn(steps: int) -> float:
        agent.reset()
        gc.collect()
        start = time.perf_counter()
        result = await run_agent(setup, message(steps))
        elapsed = time.perf_counter() - start
        _check(agent.tally.calls, steps, result.final_text)
        return elapsed

    return await _timed_turns(turn, repeats, warmup)


# --- durable: when a turn starts and ends -----------------------------------------------


class Completions:
    """When each turn workflow's body starts and returns, told to the benchmark's loop.

    The body returns after ``session.waiting`` is written to the event log, which is when a
    client could see the turn end. The hook wraps ``TurnRuntime.run_turn`` on the running
    service's instance only; the body runs on whichever loop DBOS runs workflows on, so
    the end is handed over with ``call_soon_threadsafe``.
    """

    def __init__(self, service: Any) -> None:
        self.loop = asyncio.get_running_loop()
        self.started: dict[str, float] = {}
        self.finished: dict[str, tuple[float, str]] = {}
        self.waiters: dict[str, asyncio.Future[None]] = {}
        #: record ends without waking the loop (so a follower is not woken by the hook)
        self.quiet = False
        self.quiet_ends: dict[str, float] = {}
        original = service.runtime.run_turn

        async def run_turn(session_id: str, turn: int, text: str) -> str:
            self.started[session_id] = time.perf_counter()
            result: str = await original(session_id, turn, text)
            at = time.perf_counter()
            if self.quiet:
                self.quiet_ends[session_id] = at
            else:
                self.loop.call_soon_threadsafe(self._finish, session_id, at, result)
            return result

        service.runtime.run_turn = run_turn

    def _finish(self, session_id: str, at: float, result: str) -> None:
        self.finished[session_id] = (at, result)
        waiter = self.waiters.pop(session_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, session_id: str) -> tuple[float, float]:
        """``(body started, body returned)`` of the session's turn, once it has returned."""
        if session_id not in self.finished:
            waiter = self.loop.create_future()
            self.waiters[session_id] = waiter
            await waiter
        at, result = self.finished.pop(session_id)
        if result == "failed":
            raise AssertionError(f"benchmark turn of {session_id} failed")
        return self.started.pop(session_id), at


async def _session(service: Any, done: Completions, steps: int) -> dict[str, float]:
    """Create a session whose first message starts a ``steps``-step turn; its timings."""
    begin = time.perf_counter()
    accepted = await service.create(message(steps))
    enqueued = time.perf_counter()
    started, finished = await done.wait(accepted.session_id)
    return {
        "total": finished - begin,
        "create": enqueued - begin,
        "pickup": started - enqueued,
        "body": finished - started,
    }


async def _per_step(
    service: Any, done: Completions, agent: Agent, seams: Seams, repeats: int, warmup: int
) -> dict[str, Any]:
    async def timed(steps: int) -> dict[str, float]:
        agent.reset()
        gc.collect()
        seams.take()
        record = await _session(service, done, steps)
        _check(agent.tally.calls, steps, FINAL_TEXT)
        return record

    for steps in _orders(warmup):
        await timed(steps)
    samples: dict[str, list[dict[str, float]]] = {str(SHORT): [], str(LONG): []}
    calls: dict[str, dict[str, list[float]]] = {str(SHORT): {}, str(LONG): {}}
    for steps in _orders(repeats):
        samples[str(steps)].append(await timed(steps))
        for key, (count, seconds) in seams.take().items():
            entry = calls[str(steps)].setdefault(key, [0, 0.0])
            entry[0] += count
            entry[1] += seconds
    return {"turns": samples, "seams": calls}


async def _throughput(
    service: Any, done: Completions, agent: Agent, concurrency: int, sessions: int
) -> dict[str, Any]:
    """``concurrency`` clients, each creating one-step sessions back to back (closed loop)."""

    async def client(records: list[dict[str, float]], budget: list[int]) -> None:
        while budget[0] > 0:
            budget[0] -= 1
            records.append(await _session(service, done, SHORT))

    # a warm-up wave, not counted: one session per client, ten at most
    await asyncio.gather(*(client([], [1]) for _ in range(min(concurrency, 10))))
    agent.reset()
    gc.collect()
    records: list[dict[str, float]] = []
    budget = [sessions]
    start = time.perf_counter()
    await asyncio.gather(*(client(records, budget) for _ in range(concurrency)))
    wall = time.perf_counter() - start
    _check(agent.tally.calls, sessions, FINAL_TEXT)
    return {
        "concurrency": concurrency,
        "sessions": sessions,
        "wall_seconds": wall,
        "latencies": [r["total"] for r in records],
        "pickups": [r["pickup"] for r in records],
    }


async def _stream_lag(service: Any, done: Completions, sessions: int) -> list[float]:
    """How long after a turn's body returns a client following the log sees its end.

    ``session.waiting`` is written just before the body returns, so a follower woken by
    the write sees it at about the same time (a lag near 0, possibly below).
    """
    import msgspec

    lags = []
    for _ in range(sessions):
        done.quiet = True
        accepted = await service.create(message(SHORT))
        stream = await service.events(accepted.session_id, 0, follow=True)
        seen = 0.0
        async with contextlib.aclosing(stream) as lines:
            async for line in lines:
                if line and msgspec.json.decode(line)["type"] == "session.waiting":
                    seen = time.perf_counter()
                    break
        while accepted.session_id not in done.quiet_ends:
            await asyncio.sleep(0.001)
        done.quiet = False
        done.started.pop(accepted.session_id, None)
        lags.append(seen - done.quiet_ends.pop(accepted.session_id))
    return lags


@contextlib.asynccontextmanager
async def _service(agent: Agent, app_root: Path) -> AsyncIterator[tuple[Any, Completions]]:
    from eve.sessions import SessionService, resolve_settings

    settings = resolve_settings(
        app_root,
        env=os.environ,
        executor_id="bench-durability",
    )
    service = SessionService(agent.setup, settings)
    await service.start()
    try:
        yield service, Completions(service)
    finally:
        await service.stop()


async def _durable(
    agent: Agent,
    app_root: Path,
    repeats: int,
    warmup: int,
    levels: list[tuple[int, int]],
    lag_sessions: int,
) -> dict[str, Any]:
    seams = Seams.installed()
    async with _service(agent, app_root) as (service, done):
        started = time.perf_counter()
        result = await _per_step(service, done, agent, seams, repeats, warmup)
        result["per_step_phase_seconds"] = time.perf_counter() - started
        result["throughput"] = [
            await _throughput(service, done, agent, concurrency, sessions)
            for concurrency, sessions in levels
        ]
        result["stream_lag"] = await _stream_lag(service, done, lag_sessions)
    return result


# --- DBOS alone -------------------------------------------------------------------------


async def _dbos_alone(app_root: Path, repeats: int, warmup: int) -> dict[str, Any]:
    """The floor under eve: a bare DBOS workflow making the same number of DBOS steps.

    An agent step is one DBOS step (the model response and its tool call), so a turn of N
    agent steps is a workflow of N no-op async steps returning a checkpoint-sized value.
    Same database and DBOS configuration as eve's engine, launched the same way, but
    started directly (no queue), with no event log and no eve tables.
    """
    from dbos import DBOS

    from eve.sessions.engine import dbos_config
    from eve.sessions.settings import resolve_settings

    settings = resolve_settings(app_root, env=os.environ)
    value = "x" * 300

    async def noop() -> str:
        return value

    @DBOS.workflow(name="bench.dbos_alone")
    async def workflow(steps: int) -> int:
        for index in range(steps):
            await DBOS.run_step_async({"name": f"step:{index}"}, noop)
        return steps

    config = dbos_config(replace(settings, executor_id="bench-dbos-alone"))
    DBOS(config=config)
    DBOS.launch()  # on this loop's thread, as eve's engine launches it
    try:

        async def turn(steps: int) -> float:
            gc.collect()
            start = time.perf_counter()
            handle = await DBOS.start_workflow_async(workflow, steps)
            if await handle.get_result() != steps:
                raise AssertionError("the DBOS-alone workflow returned the wrong value")
            return time.perf_counter() - start

        return await _timed_turns(turn, repeats, warmup)
    finally:
        await asyncio.to_thread(DBOS.destroy, destroy_registry=False)


# --- what-if settings (measured as variants, eve's code is left as it is) ---------------


def _queue_polling(seconds: float) -> None:
    """Make eve's turn queue poll every ``seconds`` (eve asks DBOS for 0.05 s)."""
    from dbos import DBOS

    register = DBOS.register_queue_async

    async def with_interval(*args: Any, **kwargs: Any) -> Any:
        kwargs["polling_interval_sec"] = seconds
        return await register(*args, **kwargs)

    DBOS.register_queue_async = staticmethod(with_interval)  # type: ignore[method-assign]


# --- where the time goes ----------------------------------------------------------------


@dataclass
class Seams:
    """Wall time and calls of every sync method of DBOS's system database and eve's store.

    Only the outermost wrapped call on a thread counts, so a method calling another one is
    not counted twice. The methods run in worker threads; their wall time includes waiting
    for a database lock and for the GIL.
    """

    totals: dict[str, list[float]] = field(default_factory=dict)
    local: threading.local = field(default_factory=threading.local)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def installed(cls) -> Seams:
        from dbos._sys_db import SystemDatabase
        from dbos._sys_db_postgres import PostgresSystemDatabase
        from dbos._sys_db_sqlite import SQLiteSystemDatabase

        from eve.sessions.store import SessionStore

        seams = cls()
        for database in (SystemDatabase, SQLiteSystemDatabase, PostgresSystemDatabase):
            seams.wrap(database, "dbos")
        seams.wrap(SessionStore, "eve")
        return seams

    def wrap(self, cls: type, prefix: str) -> None:
        for name, value in list(vars(cls).items()):
            # plain sync functions only: not static or class methods, properties, coroutines
            if name.startswith("__") or not inspect.isfunction(value):
                continue
            # the notification listener loops for the process's life and would hide its calls
            if name.startswith("_notification_listener"):
                continue
            if inspect.iscoroutinefunction(value):
                continue
            setattr(cls, name, self._timed(f"{prefix}.{name}", value))

    def _timed(self, key: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if getattr(self.local, "depth", 0):
                return function(*args, **kwargs)
            self.local.depth = 1
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                self.local.depth = 0
                with self.lock:
                    entry = self.totals.setdefault(key, [0, 0.0])
                    entry[0] += 1
                    entry[1] += elapsed

        timed.__wrapped__ = function  # type: ignore[attr-defined]
        return timed

    def take(self) -> dict[str, list[float]]:
        with self.lock:
            taken, self.totals = self.totals, {}
        return taken


class _Snapshot:
    """What ``pstats.Stats`` loads, taken from a profile that keeps running.

    ``pstats.Stats(profile)`` would disable the profile, and ``disable`` acts on the
    calling thread, not on the thread the profile runs in.
    """

    def __init__(self, profile: cProfile.Profile) -> None:
        profile.snapshot_stats()
        self.stats: dict[Any, Any] = profile.stats

    def create_stats(self) -> None:
        pass


class ThreadProfiles:
    """cProfile in every thread: ``cProfile`` alone sees only the thread that enabled it.

    Installed before DBOS starts its threads (the workflow loop, the queue poller, the
    executor), so each new thread enables its own profile on its first call. ``clear``
    starts the measured window; ``stats`` merges all threads' profiles.
    """

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []

    def _start_in_thread(self, *_: Any) -> None:
        sys.setprofile(None)
        profile = cProfile.Profile()
        self.profiles.append(profile)
        profile.enable()

    def install(self) -> None:
        threading.setprofile(self._start_in_thread)
        self._start_in_thread()

    def clear(self) -> None:
        for profile in list(self.profiles):
            profile.clear()

    def rows(self) -> list[dict[str, Any]]:
        import pstats

        snapshots = [_Snapshot(p) for p in list(self.profiles)]
        # Stats accepts anything with create_stats() and .stats; typeshed says profiles only
        stats = pstats.Stats(*[s for s in snapshots if s.stats])  # type: ignore[arg-type]
        raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
        return [
            {
                "function": _label(where),
                "calls": calls,
                "tottime_s": tottime,
                "cumtime_s": cumtime,
            }
            for where, (_, calls, tottime, cumtime, _callers) in raw.items()
        ]


def _label(where: tuple[str, int, str]) -> str:
    filename, line, name = where
    if filename == "~":
        return name
    for marker in ("site-packages/", "lib/python3.11/", "lib/python3.12/", "lib/python3.13/"):
        if marker in filename:
            filename = filename.split(marker, 1)[1]
            break
    else:
        filename = filename.replace(str(Path.cwd()) + "/", "")
    return f"{filename}:{line}({name})"


async def _profile(agent: Agent, app_root: Path, turns: int) -> dict[str, Any]:
    """cProfile (all threads) over ``turns`` long turns, minus as many short ones."""
    profiles = ThreadProfiles()
    profiles.install()
    result: dict[str, Any] = {"turns": turns}
    async with _service(agent, app_root) as (service, done):
        for steps in _orders(2):
            await _session(service, done, steps)  # warm-up
        for steps in (SHORT, LONG):
            profiles.clear()
            start = time.perf_counter()
            for _ in range(turns):
                await _session(service, done, steps)
            result[f"wall_seconds_{steps}"] = time.perf_counter() - start
            result[f"rows_{steps}"] = profiles.rows()
    threading.setprofile(None)
    sys.setprofile(None)
    return result


# --- entry point ------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench._durability_worker")
    parser.add_argument(
        "--config", required=True, choices=["memory", "durable", "dbos-alone", "profile"]
    )
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument(
        "--levels", default="", help="throughput: concurrency:sessions, comma-separated"
    )
    parser.add_argument("--lag-sessions", type=int, default=0)
    parser.add_argument("--profile-turns", type=int, default=8)
    parser.add_argument("--sqlite-synchronous", choices=["NORMAL", "FULL"], default=None)
    parser.add_argument("--queue-polling", type=float, default=None, metavar="SECONDS")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    levels = [
        (int(c), int(n)) for c, n in (pair.split(":") for pair in args.levels.split(",") if pair)
    ]
    with tempfile.TemporaryDirectory(prefix="eve-bench-durability-") as tmp:
        root = Path(tmp)
        agent = build_agent(root)
        if args.sqlite_synchronous is not None:
            os.environ["EVE_SQLITE_SYNCHRONOUS"] = args.sqlite_synchronous
        if args.queue_polling is not None:
            _queue_polling(args.queue_polling)
        if args.config == "memory":
            result = asyncio.run(_in_memory(agent, args.repeats, args.warmup))
        elif args.config == "dbos-alone":
            result = asyncio.run(_dbos_alone(root, args.repeats, args.warmup))
        elif args.config == "durable":
            result = asyncio.run(
                _durable(agent, root, args.repeats, args.warmup, levels, args.lag_sessions)
            )
        else:
            result = asyncio.run(_profile(agent, root, args.profile_turns))
    args.out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
