"""Two workers of one deployment both run DBOS's scheduler, and every tick still runs once:
``eve serve --workers 2`` on one PostgreSQL, and two servers on one SQLite file."""

from __future__ import annotations

from collections import Counter

from tests.conftest import AppFactory
from tests.schedules.apps import md_schedule, scheduled_sessions, wait_until
from tests.sessions.harness import Server


def test_two_workers_never_fire_a_tick_twice(make_app: AppFactory, postgres_url: str) -> None:
    root = make_app({"agent/schedules/ticker.md": md_schedule()})
    server = Server(
        app_root=root,
        args=["--workers", "2"],
        env={"EVE_DATABASE_URL": postgres_url, "EVE_WORKER_ID": "sched"},
    )
    server.start()
    try:
        runs = wait_until(lambda: (r := scheduled_sessions(server)) and len(r) >= 3 and r)
    finally:
        output = server.stop()
    ticks = Counter(run["tick"] for run in runs)
    assert all(n == 1 for n in ticks.values()), (ticks, output)


def test_two_servers_on_one_sqlite_database_never_fire_a_tick_twice(
    make_app: AppFactory,
) -> None:
    root = make_app({"agent/schedules/ticker.md": md_schedule()})
    first, second = (Server(app_root=root, env={"EVE_WORKER_ID": w}) for w in ("one", "two"))
    # the first compiles .eve/ (a second compiling at once could race it); then both run
    first.start()
    try:
        second.start()
        # both run DBOS's scheduler over the one SQLite file under .eve/sessions
        runs = wait_until(lambda: (r := scheduled_sessions(second)) and len(r) >= 3 and r)
    finally:
        output = first.stop() + second.stop()
    ticks = Counter(run["tick"] for run in runs)
    assert all(n == 1 for n in ticks.values()), (ticks, output)
