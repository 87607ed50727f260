"""A deployment under load: ``eve serve`` with N closed-loop clients of a slow model.

Each client owns a session, follows its stream, and sends its next message as soon as the
stream says the last turn ended. The model (``bench/_sleep_model.py``, a plugin) takes 2 s a
step, 3 steps a turn, so N clients can at best finish N / 6 turns a second: the report sets
what the server achieved against that limit, with the overhead a turn paid over its 6 s of
model time, how long a POST took, the server's CPU per turn (its whole process tree, from
``/proc``), its RSS, the bytes stored per turn and a py-spy profile of where its busy time
went. Configurations: N = 100, 500, 1,000 on SQLite and PostgreSQL, one and two workers
(with the CPU per turn of each worker), and two hosts (network namespaces,
``tests/netns.py``) sharing PostgreSQL, with the CPU per turn of each.

The clients run in their own processes (``bench/_scale_clients.py``, one per 400 clients) and
report their own CPU, so the report shows whether they or the server were the bottleneck.
``python -m bench.scale [--quick] [--config NAME ...]``: a run of some configurations keeps
the committed figures of the others in ``bench/results/scale.{json,md}``. ``--model-spread
0.25`` draws each step's latency around the same 2 s mean (``_sleep_latency.py``), so the
sessions do not move in phase; each row names its model and says how evenly the load came.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from bench import _offcpu, _pyspy, _scale_callers, _scale_waves, _thread_sched
from bench._machine import machine_info, package_version
from bench._results import RESULTS_DIR, publish
from bench._scale_callers import Users
from bench._scale_server import (
    REPO,
    TOKEN,
    HealthProbe,
    ServeProcess,
    cpu_seconds,
    install_model_plugin,
    log_summary,
    process_tree,
    rss_bytes,
    thread_count,
    write_app,
)
from bench._sleep_latency import MAX_SPREAD, SleepSpec, parse
from bench._storage_worker import _postgres_bytes, _sqlite_bytes
from eve.errors import UnknownModel
from tests.netns import Hosts, NamespacesUnavailable, unavailable
from tests.postgres import PostgresServer, PostgresUnavailable, find_bindir

NAME = "scale"
CLIENTS_PER_PROCESS = 400
#: a directory the clients' own records of each configuration are copied to (a diagnostic)
KEEP_CLIENTS_ENV = "EVE_BENCH_CLIENTS_KEEP"
TARGET_CPU_MS = 15.0
TARGET_RATIO = 0.8
#: the model's step latency by default: 2 s on average as a real model's, not exactly 2 s,
#: with which 1,000 sessions fall into step (bench/README.md, *Exact or spread*)
DEFAULT_SPREAD = 0.25
Backend = Literal["sqlite", "postgres"]


@dataclass(frozen=True, kw_only=True)
class Config:
    backend: Backend
    clients: int
    workers: int = 1
    #: > 1: that many ``eve serve`` processes, each in a network namespace of its own
    hosts: int = 1

    @property
    def name(self) -> str:
        where = f"{self.hosts}h" if self.hosts > 1 else f"{self.workers}w"
        return f"{self.backend}-{where}-{self.clients}"


@dataclass(frozen=True, kw_only=True)
class Plan:
    #: a step's model latency, on average with a spread
    step_seconds: float
    steps: int
    #: the clients' first messages are spread over this long
    ramp_seconds: float
    #: from the first message to the start of the measured window
    warmup_seconds: float
    window_seconds: float
    idle_seconds: float
    configs: list[Config]
    #: count the servers' SQL statements (``_sleep_model._count_statements``): a run of its
    #: own, since counting costs CPU
    sql_counts: bool = False
    #: settings for the servers (``--server-env``): the servers get no ``EVE_`` variable of
    #: the bench's own environment, so a setting under trial is named here and recorded
    server_env: dict[str, str] = field(default_factory=dict)
    #: > 0: a client's every N-th message opens a new session (``--first-every``)
    first_every: int = 0
    #: each client a user with a token of its own, not the operator (``--principals``)
    principals: bool = False
    #: each step's latency drawn with this standard deviation over its mean
    #: (``--model-spread``, ``_sleep_latency.py``); 0: exactly ``step_seconds``
    step_spread: float = DEFAULT_SPREAD
    #: > 0: the off-CPU sampler's samples a second over the window (``--offcpu``; with
    #: ``EVE_BENCH_THREAD_SCHED`` in ``server_env``, whose file names the threads)
    offcpu_rate: float = 0.0

    @property
    def model(self) -> SleepSpec:
        return SleepSpec(seconds=self.step_seconds, steps=self.steps, spread=self.step_spread)

    @property
    def turn_seconds(self) -> float:
        """A turn's model time on average: the limit is N over it whatever the spread (a
        closed loop's rate is its clients over their mean cycle)."""
        return self.model.turn_seconds


def plan_for(quick: bool) -> Plan:
    if quick:
        return Plan(
            step_seconds=0.1, steps=3, ramp_seconds=0.3, warmup_seconds=0.6,
            window_seconds=2.0, idle_seconds=0.5,
            # two workers: the smoke test covers what a worker's share of the turns costs
            configs=[Config(backend="sqlite", clients=4, workers=2)],
        )  # fmt: skip
    configs = [
        Config(backend="sqlite", clients=n, workers=w) for w in (1, 2) for n in (100, 500, 1000)
    ]
    configs += [
        Config(backend="postgres", clients=n, workers=w) for w in (1, 2) for n in (100, 500, 1000)
    ]
    configs += [Config(backend="postgres", clients=n, hosts=2) for n in (100, 500)]
    return Plan(
        step_seconds=2.0, steps=3, ramp_seconds=6.0, warmup_seconds=12.0,
        window_seconds=30.0, idle_seconds=5.0, configs=configs,
    )  # fmt: skip


# --- the pieces of one run --------------------------------------------------------------


@dataclass(kw_only=True)
class Database:
    backend: Backend
    app_root: Path
    postgres: PostgresServer | None = None
    url: str | None = None

    def size(self) -> int:
        """Bytes in the tables (indexes included), as ``storage_growth`` counts them."""
        if self.url is not None:
            return sum(_postgres_bytes(self.url).values())
        files = sorted((self.app_root / ".eve/sessions").glob("*.sqlite"))
        return sum(
            size
            for file in files
            for table, size in _sqlite_bytes(f"sqlite:///{file}").items()
            if table != "_file"
        )

    def cpu(self) -> float:
        """The database server's CPU (its whole tree); SQLite's is the server's own."""
        if self.postgres is None or self.postgres.proc is None:
            return 0.0
        return cpu_seconds(process_tree(self.postgres.proc.pid))

    def turns_by_worker(self, since: float, until: float) -> dict[str, int]:
        """Turns that ended in the window, by the DBOS executor (worker) that ran them."""
        window = (int(since * 1000), int(until * 1000))
        if self.url is None:
            with sqlite3.connect(self.app_root / ".eve/sessions/dbos.sqlite") as connection:
                rows = connection.execute(_TURNS_BY_WORKER.format(table="", at="?"), window)
                return {str(executor): int(count) for executor, count in rows.fetchall()}
        import psycopg

        with psycopg.connect(self.url) as connection:
            found = connection.execute(
                _TURNS_BY_WORKER.format(table="dbos.", at="%s"), window
            ).fetchall()
        return {str(executor): int(count) for executor, count in found}


_TURNS_BY_WORKER = (
    "SELECT executor_id, count(*) FROM {table}workflow_status WHERE name = 'eve.turn' "
    "AND status = 'SUCCESS' AND updated_at BETWEEN {at} AND {at} GROUP BY executor_id"
)


@contextmanager
def _postgres(hosts: Hosts | None) -> Iterator[PostgresServer]:
    bindir = find_bindir()
    if bindir is None:
        raise PostgresUnavailable("no PostgreSQL server binaries (initdb, postgres) found")
    also = (hosts.gateway,) if hosts is not None else ()
    server = PostgresServer.start(bindir, durable=True, also_listen=also)
    try:
        yield server
    finally:
        server.stop()


def _servers(
    config: Config, plan: Plan, root: Path, db: Database, hosts: Hosts | None
) -> list[ServeProcess]:
    counts = {"EVE_BENCH_SQL_COUNTS": str(root / "sql-counts.json")} if plan.sql_counts else {}
    common: dict[str, Any] = {
        "env": plan.server_env | counts,
        "app_root": root, "site": root / "site", "workers": config.workers,
        "model": plan.model.model_id,
        # every client's model call holds a compute permit while it waits: none may queue
        "concurrency": max(100, config.clients),
    }  # fmt: skip
    if hosts is None:
        from tests.sessions.harness import free_port

        return [
            ServeProcess(
                host="127.0.0.1", port=free_port(), worker_id="bench", database_url=db.url, **common
            )
        ]
    assert db.postgres is not None and db.url is not None
    url = db.postgres.url_of(db.url.rsplit("/", 1)[-1], host=hosts.gateway)
    return [
        ServeProcess(
            host=hosts.address(i), port=8000, worker_id=f"host{i}", database_url=url,
            namespace=hosts.namespace(i), **common,
        )
        for i in range(config.hosts)
    ]  # fmt: skip


def _clients(
    config: Config, plan: Plan, urls: list[str], out: Path, users: Users | None
) -> list[tuple[subprocess.Popen[str], Path]]:
    processes = math.ceil(config.clients / CLIENTS_PER_PROCESS)
    started = []
    first_user = 0
    for k in range(processes):
        count = config.clients // processes + (k < config.clients % processes)
        result = out / f"clients-{k}.json"
        command = [
            sys.executable, "-m", "bench._scale_clients", "--clients", str(count),
            "--offset", str(k), "--out", str(result),
            "--first-every", str(plan.first_every),
            *[arg for url in urls for arg in ("--url", url)],
        ]  # fmt: skip
        if users is not None:
            listed = out / f"tokens-{k}.json"
            listed.write_text(json.dumps(users.tokens(first_user, count)))
            command += ["--tokens", str(listed)]
            first_user += count
        env = {"EVE_BENCH_TOKEN": TOKEN, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen(
            command, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        started.append((proc, result))
    for proc, _ in started:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"a client process did not start: {line!r}")
    return started


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def _ms(seconds: float | None) -> float | None:
    return _round(None if seconds is None else seconds * 1000, 1)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def run_config(config: Config, plan: Plan) -> dict[str, Any]:
    """One configuration: start the database and servers, run the clients, measure."""
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="eve-bench-scale-") as tmp:
        root = Path(tmp)
        write_app(root)
        install_model_plugin(root / "site")
        hosts = stack.enter_context(_hosts(config.hosts)) if config.hosts > 1 else None
        db = Database(backend=config.backend, app_root=root)
        if config.backend == "postgres":
            db.postgres = stack.enter_context(_postgres(hosts))
            db.url = db.postgres.database("scale")
        # the provider listens on loopback: the servers of several hosts would not reach it
        users = stack.enter_context(_scale_callers.users()) if plan.principals else None
        if users is not None:
            assert hosts is None, "--principals with one host"
            plan = replace(plan, server_env=plan.server_env | users.settings)
        servers = _servers(config, plan, root, db, hosts)
        for server in servers:
            stack.callback(server.stop)
            server.start()
        return _measure(config, plan, root, db, servers, users)


@contextmanager
def _hosts(count: int) -> Iterator[Hosts]:
    why = unavailable()
    if why is not None:
        raise NamespacesUnavailable(why)
    hosts = Hosts.create(count)
    try:
        yield hosts
    finally:
        hosts.close()


def _cpu(servers: list[ServeProcess]) -> list[float]:
    return [cpu_seconds(server.pids()) for server in servers]


def _worker_pids(servers: list[ServeProcess]) -> list[int]:
    return [pid for server in servers for pid in server.worker_pids().values()]


def _worker_cpu(servers: list[ServeProcess]) -> dict[str, float]:
    """Each worker process's own CPU, by its executor id."""
    return {
        name: cpu_seconds([pid]) for server in servers for name, pid in server.worker_pids().items()
    }


def _measure(
    config: Config,
    plan: Plan,
    root: Path,
    db: Database,
    servers: list[ServeProcess],
    users: Users | None = None,
) -> dict[str, Any]:
    time.sleep(1.0)  # start-up work (recovery, the first sweep) is not idling
    idle_before = sum(_cpu(servers))
    time.sleep(plan.idle_seconds)
    idle_pct = 100 * (sum(_cpu(servers)) - idle_before) / plan.idle_seconds
    stored_before = db.size()
    clients = _clients(config, plan, [s.url for s in servers], root, users)
    start = time.time() + 0.5
    measure_from = start + plan.warmup_seconds
    until = measure_from + plan.window_seconds
    schedule = json.dumps(
        {"start": start, "ramp_s": plan.ramp_seconds, "measure_from": measure_from, "until": until}
    )
    for proc, _ in clients:
        assert proc.stdin is not None
        proc.stdin.write(schedule + "\n")
        proc.stdin.flush()
    time.sleep(max(0.0, measure_from - time.time()))
    cpu_before, db_cpu_before = _cpu(servers), db.cpu()
    workers_before = _worker_cpu(servers)
    probe = HealthProbe(servers[0].url).start()
    profile = _pyspy.record(
        servers[0].proc.pid if servers[0].proc else 0, plan.window_seconds, root / "profile.txt"
    )
    sched = plan.server_env.get(_thread_sched.SETTING)
    sampler = (
        _offcpu.start(
            Path(sched), _worker_pids(servers), seconds=until - time.time(),
            rate=plan.offcpu_rate,
        )
        if sched and plan.offcpu_rate
        else None
    )  # fmt: skip
    time.sleep(max(0.0, until - time.time()))
    profile.stop()  # the window's end, not the server's shutdown
    probe.stop()
    threads_seen = _thread_sched.row(Path(sched), (measure_from, until), sampler) if sched else None
    cpu_after, db_cpu_after = _cpu(servers), db.cpu()
    worker_cpu = {
        name: cpu - workers_before.get(name, 0.0) for name, cpu in _worker_cpu(servers).items()
    }
    rss = sum(rss_bytes(server.pids()) for server in servers)
    threads = sum(thread_count(server.pids()) for server in servers)
    # what the servers said by the window's end, not what their shutdown says about the
    # turns it stops
    logged = log_summary("".join(server.output(tail=2_000_000) for server in servers))
    by_worker = db.turns_by_worker(measure_from, until)
    outcomes = [_client_result(proc, path) for proc, path in clients]
    if keep := os.environ.get(KEEP_CLIENTS_ENV):
        for _, path in clients:  # each client's turns as recorded, for a diagnostic
            shutil.copy(path, Path(keep) / f"{config.name}-{path.name}")
    for server in servers:
        server.stop()  # then the WAL is checkpointed and nothing writes while it is counted
    stored = db.size() - stored_before
    if plan.sql_counts:
        return _statements_per_turn(root / "sql-counts.json", outcomes)
    return _report(
        config, plan, outcomes, window=(measure_from, until),
        server_cpu=[a - b for a, b in zip(cpu_after, cpu_before, strict=True)],
        db_cpu=db_cpu_after - db_cpu_before, rss=rss, stored=stored, idle_pct=idle_pct,
        by_worker=by_worker, worker_cpu=worker_cpu, profile=profile.summary(),
        threads=threads, logged=logged, probe=probe, threads_seen=threads_seen,
    )  # fmt: skip


def _statements_per_turn(path: Path, outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    """The SQL statements the server ran per finished turn (idle polling included)."""
    turns = sum(1 for o in outcomes for t in o["turns"] if "ended" in t)
    counted: list[tuple[str, int]] = json.loads(path.read_text())
    # the calls handed to a thread are counted beside the statements (``_sleep_model.py``)
    handed = [(name, n) for name, n in counted if name.startswith("thread: ")]
    counted = [(name, n) for name, n in counted if not name.startswith("thread: ")]
    per_turn = {statement: round(n / max(1, turns), 2) for statement, n in counted}
    total = round(sum(n for _, n in counted) / max(1, turns), 1)
    print(f"{turns} turns, {total} statements per turn:")
    for statement, n in list(per_turn.items())[:40]:
        print(f"  {n:7.2f}  {statement}")
    hops = {name: round(n / max(1, turns), 2) for name, n in handed}
    total_hops = round(sum(n for _, n in handed) / max(1, turns), 1)
    print(f"{total_hops} calls handed to a thread per turn:")
    for name, n in list(hops.items())[:20]:
        print(f"  {n:7.2f}  {name}")
    return {
        "turns": turns,
        "statements_per_turn": total,
        "by_statement": per_turn,
        "thread_calls_per_turn": total_hops,
        "by_thread_call": hops,
    }


def _client_result(proc: subprocess.Popen[str], path: Path) -> dict[str, Any]:
    if proc.wait(120) != 0 or not path.exists():
        raise RuntimeError(f"a client process failed (exit {proc.returncode})")
    result: dict[str, Any] = json.loads(path.read_text())
    return result


def _report(
    config: Config,
    plan: Plan,
    outcomes: list[dict[str, Any]],
    *,
    window: tuple[float, float],
    server_cpu: list[float],
    db_cpu: float,
    rss: int,
    stored: int,
    idle_pct: float,
    by_worker: dict[str, int],
    worker_cpu: dict[str, float],
    profile: dict[str, Any],
    threads: int,
    logged: dict[str, Any],
    probe: HealthProbe,
    threads_seen: dict[str, Any] | None = None,
) -> dict[str, Any]:
    since, until = window
    turns = [t for o in outcomes for t in o["turns"]]
    done = [t for t in turns if "ended" in t and since <= t["ended"] <= until]
    posted = [t for t in turns if since <= t["sent"] <= until]
    posts = [t["post_s"] for t in posted]
    refused = sum(1 for t in turns if t["status"] != 202)
    overheads = _scale_waves.overheads(done, plan.model)
    n = len(done)
    limit = config.clients / plan.turn_seconds
    per_turn = (lambda s: round(1000 * s / n, 2)) if n else (lambda s: None)
    all_done = sum(1 for t in turns if "ended" in t)
    client_cpu = sum(o["cpu_s"] for o in outcomes)
    report: dict[str, Any] = {
        "config": config.name, "backend": config.backend, "clients": config.clients,
        "workers": config.workers, "hosts": config.hosts,
        "model": plan.model.model_id, "model_spread": plan.step_spread,
        "model_step_mean_s": _round(_scale_waves.drawn_step_mean(posted, plan.model), 4),
        "limit_turns_per_s": round(limit, 1),
        "turns_in_window": n,
        # (wall-clock seconds: to read a server-side diagnostic's lines of the window)
        "window_wall": [round(since, 3), round(until, 3)],
        "turns_per_s": round(n / plan.window_seconds, 2),
        "of_limit": round(n / plan.window_seconds / limit, 3),
        "overhead_p50_ms": _ms(_percentile(overheads, 0.5)),
        "overhead_p95_ms": _ms(_percentile(overheads, 0.95)),
        "post_p50_ms": _ms(_percentile(posts, 0.5)),
        "post_p95_ms": _ms(_percentile(posts, 0.95)),
        **_post_views(turns, outcomes, window),
        **_scale_waves.arrivals(turns, window),
        "posts_refused": refused,
        "turns_failed": sum(o["failed"] for o in outcomes),
        "stream_reconnects": sum(o["reconnects"] for o in outcomes),
        # the clients' requests keep a connection each: more is the server closing them
        "request_connections": sum(o.get("request_connections", 0) for o in outcomes),
        # the server's writes to a follower per turn (each a send() system call), and events
        "stream_chunks_per_turn": _per(outcomes, "stream_chunks", all_done),
        "stream_events_per_turn": _per(outcomes, "stream_events", all_done),
        "server_cpu_ms_per_turn": per_turn(sum(server_cpu)),
        "server_cpu_pct_of_core": round(100 * sum(server_cpu) / plan.window_seconds, 1),
        "db_cpu_ms_per_turn": per_turn(db_cpu) if config.backend == "postgres" else None,
        "client_cpu_ms_per_turn": round(1000 * client_cpu / max(1, all_done), 2),
        "idle_server_cpu_pct": round(idle_pct, 1),
        "rss_mb": round(rss / 2**20, 1),
        "threads_at_end": threads,
        # the event loop's lag: /health's answer time, every 0.25 s through the window
        "health_p50_ms": _ms(_percentile(probe.seconds, 0.5)),
        "health_p95_ms": _ms(_percentile(probe.seconds, 0.95)),
        "health_max_ms": _ms(max(probe.seconds, default=None)),
        "server_log": logged,
        "bytes_stored_per_turn": round(stored / all_done) if all_done else None,
        "profile": profile,
    }  # fmt: skip
    cpu_ms = report["server_cpu_ms_per_turn"]
    if profile.get("available") and profile.get("gil") and n:
        # the lock holder's samples, each 1 / RATE s of holding: the lock's ms a turn (fewer
        # if py-spy fell behind its rate)
        held = 1000 * profile["samples"] / _pyspy.RATE / n
        profile["gil_held_ms_per_turn"] = round(held, 2)
        profile["areas_ms_per_turn"] = {
            name: round(pct * held / 100, 2) for name, pct in profile["areas_pct"].items()
        }
    elif profile.get("available") and cpu_ms is not None:
        # the busy samples' shares applied to the measured CPU: where a turn's ms go
        profile["areas_ms_per_turn"] = {
            name: round(pct * cpu_ms / 100, 1) for name, pct in profile["areas_pct"].items()
        }
    if threads_seen is not None:
        report["thread_sched"] = threads_seen
    if config.hosts > 1 or config.workers > 1:
        report["turns_by_worker"] = by_worker
    if config.workers > 1:
        # each worker's CPU over the turns it ran: what one core serves, whatever the machine
        report["cpu_ms_per_turn_by_worker"] = {
            name: round(1000 * cpu / by_worker[name], 2) if by_worker.get(name) else None
            for name, cpu in sorted(worker_cpu.items())
        }
    if config.hosts > 1:
        ran = [by_worker.get(f"host{i}-0", 0) for i in range(config.hosts)]
        report["cpu_ms_per_turn_by_host"] = {
            f"host{i}": round(1000 * cpu / ran[i], 2) if ran[i] else None
            for i, cpu in enumerate(server_cpu)
        }
    return report


def _post_views(
    turns: list[dict[str, Any]], outcomes: list[dict[str, Any]], window: tuple[float, float]
) -> dict[str, Any]:
    """A POST inside the server (its ``Server-Timing``: the request read to the ``202``
    written; where its claim ran) and the clients' own loop lag, which a client's POST time
    includes: the two views that tell the server's time from the client's."""
    since, until = window
    timed = [t for t in turns if since <= t["sent"] <= until and "answer_s" in t]
    answers = [t["answer_s"] for t in timed]
    claims = [t["claim_s"] for t in timed if "claim_s" in t]
    on_loop = sum(1 for t in timed if t.get("claim") == "loop")
    lag = [s for o in outcomes for s in o.get("loop_lag_s", [])]
    # a session's first message (``--first-every``) and the follow-ups, apart
    posted = [t for t in turns if since <= t["sent"] <= until]
    firsts = [t["post_s"] for t in posted if t.get("first")]
    follow_ups = [t["post_s"] for t in posted if not t.get("first")]
    return {
        "post_first_p50_ms": _ms(_percentile(firsts, 0.5)),
        "post_first_p95_ms": _ms(_percentile(firsts, 0.95)),
        "post_follow_up_p50_ms": _ms(_percentile(follow_ups, 0.5)),
        "post_follow_up_p95_ms": _ms(_percentile(follow_ups, 0.95)),
        "posts_first": len(firsts),
        "post_server_p50_ms": _ms(_percentile(answers, 0.5)),
        "post_server_p95_ms": _ms(_percentile(answers, 0.95)),
        "post_claim_p95_ms": _ms(_percentile(claims, 0.95)),
        "post_claims_on_loop_pct": round(100 * on_loop / len(claims), 1) if claims else None,
        "client_lag_p50_ms": _ms(_percentile(lag, 0.5)),
        "client_lag_p95_ms": _ms(_percentile(lag, 0.95)),
        "client_lag_max_ms": _ms(max(lag, default=None)),
        **_post_walls(timed),
    }


def _p50_p95(name: str, seconds: list[float]) -> dict[str, float | None]:
    return {
        f"{name}_p50_ms": _ms(_percentile(seconds, 0.5)),
        f"{name}_p95_ms": _ms(_percentile(seconds, 0.95)),
    }


def _post_walls(timed: list[dict[str, Any]]) -> dict[str, Any]:
    """A POST's time before the server read it and after it answered, as the clients saw
    it, overall and by worker (``EVE_BENCH_POST_WALL``: ``bench/_post_wall.py``); empty
    without those marks."""
    walled = [t for t in timed if "read_at" in t]
    if not walled:
        return {}

    def split(turns: list[dict[str, Any]]) -> dict[str, Any]:
        before = [float(t["read_at"]) - t["sent"] for t in turns]
        after = [t["sent"] + t["post_s"] - float(t["answered_at"]) for t in turns]
        # sent before the loop's last decision, before the read, to take a turn of uvloop's
        # loop: the wait before the read is the loop's look between slices, then the turn
        turned = [t for t in turns if float(t.get("turn_at", 0)) >= t["sent"]]
        to_look = [float(t["turn_at"]) - t["sent"] for t in turned]
        in_turn = [float(t["read_at"]) - float(t["turn_at"]) for t in turned]
        return {
            "posts": len(turns),
            "turned_pct": round(100 * len(turned) / len(turns), 1),
            **_p50_p95("before", before),
            **_p50_p95("to_look", to_look),
            **_p50_p95("in_turn", in_turn),
            **_p50_p95("server", [t["answer_s"] for t in turns]),
            **_p50_p95("after", after),
            **_p50_p95("post", [t["post_s"] for t in turns]),
        }

    workers = sorted({t["worker"] for t in walled})
    return {
        "post_walls": split(walled),
        "post_walls_by_worker": {
            w: split([t for t in walled if t["worker"] == w]) for w in workers
        },
    }


def _per(outcomes: list[dict[str, Any]], key: str, turns: int) -> float | None:
    return round(sum(o.get(key, 0) for o in outcomes) / turns, 1) if turns else None


# --- the report -------------------------------------------------------------------------

COLUMNS = [
    ("config", "config"), ("model_spread", "step spread"), ("limit_turns_per_s", "limit/s"),
    ("turns_per_s", "turns/s"), ("of_limit", "× limit"), ("overhead_p50_ms", "overhead p50 ms"),
    ("overhead_p95_ms", "p95"), ("post_p50_ms", "POST p50 ms"), ("post_p95_ms", "p95"),
    ("server_cpu_ms_per_turn", "server CPU ms/turn"), ("db_cpu_ms_per_turn", "db CPU ms/turn"),
    ("client_cpu_ms_per_turn", "client CPU ms/turn"), ("idle_server_cpu_pct", "idle CPU %"),
    ("rss_mb", "RSS MB"), ("bytes_stored_per_turn", "bytes/turn"),
    ("load_1m_at_start", "load at start"),
]  # fmt: skip


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:,}" if isinstance(value, int) else str(value)


def markdown(report: dict[str, Any]) -> str:
    plan, machine = report["plan"], report["machine"]
    lines = [
        f"# scale ({report['date']})",
        "",
        f"Model {plan['step_seconds']} s a step on average (each row's spread: the standard "
        f"deviation over the mean), {plan['steps']} steps a turn; window "
        f"{plan['window_seconds']} s after {plan['warmup_seconds']} s of warm-up; 1-minute load "
        f"at the start {machine['load_average_1m']:.1f} on {machine['cpu_count']} CPUs. Targets: "
        f"≥ {TARGET_RATIO}× the limit at N = 1,000 on SQLite; server CPU ≤ {TARGET_CPU_MS} ms "
        "per turn.",
        "",
        "| " + " | ".join(title for _, title in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for row in report["configs"].values():
        lines.append("| " + " | ".join(_cell(row.get(key)) for key, _ in COLUMNS) + " |")
    for row in report["configs"].values():
        lines += _profile_lines(row)
    return "\n".join(lines) + "\n"


def _profile_lines(row: dict[str, Any]) -> list[str]:
    profile = row.get("profile") or {}
    extra = [f"turns by worker: {row['turns_by_worker']}"] if "turns_by_worker" in row else []
    if row.get("server_env"):
        extra.insert(0, f"server settings: {row['server_env']}")
    if "cpu_ms_per_turn_by_host" in row:
        extra.append(f"CPU ms per turn by host: {row['cpu_ms_per_turn_by_host']}")
    if "cpu_ms_per_turn_by_worker" in row:
        extra.append(f"CPU ms per turn by worker: {row['cpu_ms_per_turn_by_worker']}")
    if row.get("health_p50_ms") is not None:
        extra.append(
            f"/health answered in p50 {row['health_p50_ms']} ms, p95 {row['health_p95_ms']} "
            f"ms, at most {row['health_max_ms']} ms (the event loop's lag)"
        )
    if row.get("client_lag_p50_ms") is not None:
        extra.append(_post_line(row))
    if "post_walls" in row:
        extra.append(f"POST before the server read it / after it answered: {row['post_walls']}")
        extra.append(f"the same by worker: {row['post_walls_by_worker']}")
    if "posts_per_s_max" in row:
        extra.append(_scale_waves.line(row))
    if "thread_sched" in row:
        extra += _thread_sched.row_lines(row["thread_sched"])
    if row.get("stream_chunks_per_turn") is not None:
        extra.append(
            f"stream per turn: {row['stream_events_per_turn']} events in "
            f"{row['stream_chunks_per_turn']} chunks (the server's writes)"
        )
    if "threads_at_end" in row:
        logged = row["server_log"]
        extra.append(
            f"threads at the window's end: {row['threads_at_end']}; warnings logged: "
            f"{logged['lines']}" + (f", most often: {logged['most']}" if logged["most"] else "")
        )
    if not profile.get("available"):
        return ["", f"## {row['config']}", "", *extra, f"no profile: {profile.get('why')}"]
    shares = profile.get("areas_ms_per_turn") or profile["areas_pct"]
    unit = " ms" if "areas_ms_per_turn" in profile else "%"
    areas = ", ".join(f"{name} {value}{unit}" for name, value in shares.items())
    top = "; ".join(f"{name} {pct}%" for name, pct in list(profile["top_self_pct"].items())[:8])
    what = (
        f"the interpreter's lock held {profile['gil_held_ms_per_turn']} ms per turn, by area"
        if profile.get("gil_held_ms_per_turn") is not None
        else "server CPU per turn by area"
    )
    return [
        "", f"## {row['config']}", "", *extra,
        f"py-spy, {profile['samples']} busy samples; {what}: {areas}.",
        "", f"Top functions (self, % of busy samples): {top}.",
    ]  # fmt: skip


def _post_line(row: dict[str, Any]) -> str:
    inside = (
        f"inside the server (request read to 202 written) p50 {row['post_server_p50_ms']} ms, "
        f"p95 {row['post_server_p95_ms']} ms; its claim p95 {row['post_claim_p95_ms']} ms, "
        f"{row['post_claims_on_loop_pct']}% on the event loop; "
        if row.get("post_server_p50_ms") is not None
        else "no Server-Timing from the server; "
    )
    firsts = (
        f"; first messages ({row['posts_first']}) p50 {row['post_first_p50_ms']} ms, p95 "
        f"{row['post_first_p95_ms']} ms, follow-ups p50 {row['post_follow_up_p50_ms']} ms, "
        f"p95 {row['post_follow_up_p95_ms']} ms"
        if row.get("posts_first")
        else ""
    )
    return (
        f"POST {inside}the clients' own loop lag p50 {row['client_lag_p50_ms']} ms, "
        f"p95 {row['client_lag_p95_ms']} ms, at most {row['client_lag_max_ms']} ms{firsts}"
    )


def _load_previous() -> dict[str, Any]:
    path = RESULTS_DIR / f"{NAME}.json"
    if not path.exists():
        return {}
    previous: dict[str, Any] = json.loads(path.read_text()).get("configs", {})
    return previous


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def run(
    *,
    quick: bool = False,
    only: Sequence[str] = (),
    server_env: dict[str, str] | None = None,
    first_every: int = 0,
    principals: bool = False,
    model_spread: float = DEFAULT_SPREAD,
    offcpu_rate: float = 0.0,
) -> dict[str, Any]:
    plan = replace(
        plan_for(quick),
        offcpu_rate=offcpu_rate,
        server_env=server_env or {},
        first_every=first_every,
        principals=principals,
        step_spread=model_spread,
    )
    configs = [c for c in plan.configs if not only or c.name in only]
    results: dict[str, Any] = {} if quick else _load_previous()
    skipped: dict[str, str] = {}
    for config in configs:
        print(f"-- {config.name}", flush=True)
        # configurations may come from separate runs: each says when, and how busy the
        # machine was as it started
        when: dict[str, Any] = {"ran_at": _now(), "load_1m_at_start": round(os.getloadavg()[0], 1)}
        if plan.server_env:
            when["server_env"] = plan.server_env
        if plan.first_every or plan.principals:
            when |= {"first_every": plan.first_every, "principals": plan.principals}
        try:
            results[config.name] = run_config(config, plan) | when
        except (PostgresUnavailable, NamespacesUnavailable) as error:
            skipped[config.name] = str(error)
            print(f"   skipped: {error}", flush=True)
    report: dict[str, Any] = {
        "benchmark": NAME,
        "date": _now(),
        "machine": machine_info(),
        "versions": {name: package_version(name) for name in ("eve", "dbos", "httpx")},
        "plan": {k: v for k, v in plan.__dict__.items() if k != "configs"},
        "configs": results,
        "skipped": skipped,
    }
    publish(NAME, report, markdown(report), quick=quick)
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run; writes nothing")
    parser.add_argument(
        "--config", action="append", default=[], help="run only this one (repeatable)"
    )
    parser.add_argument(
        "--sql-counts", nargs="?", const="sqlite", choices=("sqlite", "postgres"),
        help="instead: count the SQL statements per turn (SQLite unless named, 20 clients; "
        "writes nothing)",
    )  # fmt: skip
    parser.add_argument(
        "--server-env", action="append", default=[], metavar="NAME=VALUE",
        help="a setting for the servers, e.g. EVE_REQUEST_SLICE_MS=2 (repeatable; recorded)",
    )  # fmt: skip
    parser.add_argument(
        "--first-every", type=int, default=0, metavar="N",
        help="a client's every N-th message opens a new session (a first message); the "
        "report times first messages and follow-ups apart",
    )  # fmt: skip
    parser.add_argument(
        "--principals", action="store_true",
        help="each client a user with a signed token of its own, not the operator",
    )  # fmt: skip
    parser.add_argument(
        "--model-spread", type=_spread, default=DEFAULT_SPREAD, metavar="CV",
        help="each model step's latency drawn from a lognormal of the same mean (2 s) whose "
        f"standard deviation is CV times it (0 to {MAX_SPREAD}, {DEFAULT_SPREAD} unless "
        "given; 0: exactly 2 s, the model of the rows before 2026-12-06); recorded with "
        "each row",
    )  # fmt: skip
    parser.add_argument(
        "--offcpu", type=float, default=0.0, metavar="HZ",
        help="sample where the workers' loop and writer threads sleep, HZ times a second, "
        f"from a process of its own (needs --server-env {_thread_sched.SETTING}=FILE)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    server_env = dict(_setting(text, parser) for text in args.server_env)
    if args.offcpu and _thread_sched.SETTING not in server_env:
        parser.error(f"--offcpu needs --server-env {_thread_sched.SETTING}=FILE")
    if args.sql_counts:
        run_config(
            Config(backend=args.sql_counts, clients=20),
            replace(plan_for(True), sql_counts=True, window_seconds=5.0, server_env=server_env),
        )
        return
    run(
        quick=args.quick,
        only=args.config,
        server_env=server_env,
        first_every=args.first_every,
        principals=args.principals,
        model_spread=args.model_spread,
        offcpu_rate=args.offcpu,
    )


def _spread(text: str) -> float:
    """``--model-spread``'s value, checked as the model's id would be."""
    try:
        return parse(f"1x1~{text}").spread
    except UnknownModel as error:
        raise argparse.ArgumentTypeError(f"{text!r}: from 0 to {MAX_SPREAD}") from error


def _setting(text: str, parser: argparse.ArgumentParser) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name.startswith("EVE_"):
        parser.error(f"--server-env {text!r}: expected EVE_NAME=VALUE")
    return name, value


if __name__ == "__main__":
    main()
