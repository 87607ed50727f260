"""The turn queue's one definition, and its row written before DBOS launches.

DBOS registers a queue in its system database, which it opens only at launch; its queue
manager lists the queues it should poll when it starts and then once a second. A queue
registered after launch on a new database (every first start, every test) is therefore
missed by that first look, and the first turn waited up to a second for the next one.
Writing the queue's row before launch, with a client over the same database, lets the
manager's first look find it and poll at once.

A start on a system database already at DBOS's version with the queue's row in it
(``queue_declared``: every start after the first) declares nothing, and launches DBOS with
its migrations off: DBOS then only checks its version (``run_migrations``, its supported
way to launch on a database migrated before).
"""

from __future__ import annotations

import sqlalchemy as sa
from dbos import DBOS, DBOSClient, DBOSConfig
from dbos._migration import get_dbos_migrations, sqlite_migrations
from sqlalchemy.engine import Engine

TURN_QUEUE = "eve-turns"

#: one turn per session at a time, in order; no cap per worker: a parked turn must not
#: take a slot from a new one, and what computes at once is bounded by the runtime's
#: ComputeGate (--concurrency) instead
_PARTITION_CONCURRENCY = 1
#: the schema DBOS keeps its tables in on PostgreSQL (SQLite has none)
DBOS_SCHEMA = "dbos"
#: DBOS's own poll is a safety net: this worker dequeues when kicked (``queue_pickup.py``),
#: and nothing puts a turn on this queue but an older eve. Each poll reads the queue's row
#: and claims (three queries); once a second, that was a third of an idle server's CPU
POLLING_INTERVAL_SECONDS = 10.0


def declare_turn_queue(config: DBOSConfig) -> None:
    """Create the system database's schema and the turn queue's row if missing (blocking).

    Leaves an existing row as it is: ``register_turn_queue`` after launch updates it by
    DBOS's version rule (the newest application version's settings win)."""
    url = config["system_database_url"]
    assert url is not None
    # the client never migrates: a new database needs DBOS's tables first (launch finds
    # them up to date and moves on)
    DBOS.migrate(url)
    client = DBOSClient(
        system_database_url=url,
        system_database_engine=config.get("system_database_engine"),
        application_name=config["name"],
    )
    try:
        client.register_queue(
            TURN_QUEUE,
            partition_concurrency=_PARTITION_CONCURRENCY,
            worker_concurrency=None,
            polling_interval_sec=POLLING_INTERVAL_SECONDS,
            on_conflict="never_update",
        )
    finally:
        client.destroy()


def queue_declared(engine: Engine, *, postgres: bool) -> bool:
    """Whether the system database is at the migration version this DBOS requires (or a
    newer one, which DBOS runs on too) and holds the turn queue's row: one read of DBOS's
    own record of its migrations, which the database holds and no copy of eve's could
    vouch for (on SQLite it is a file of its own). Then neither ``declare_turn_queue`` nor
    DBOS's migrations at launch have anything to do (blocking; a read that fails, on a
    database without DBOS's tables or one out of reach, answers no)."""
    schema = f"{DBOS_SCHEMA}." if postgres else ""
    read = sa.text(
        f"SELECT version, EXISTS (SELECT 1 FROM {schema}queues WHERE name = :queue) "
        f"FROM {schema}dbos_migrations"
    )
    try:
        with engine.connect() as c:
            row = c.execute(read, {"queue": TURN_QUEUE}).first()
    except sa.exc.SQLAlchemyError:
        return False
    return row is not None and row[0] >= dbos_migration_version(postgres=postgres) and row[1]


def dbos_migration_version(*, postgres: bool) -> int:
    """The migration version of DBOS's system tables that the installed DBOS requires: the
    count of its migrations, as its own check counts them (DBOS internals, pinned by
    ``dbos<4``; eve keeps DBOS's default of LISTEN/NOTIFY and is not on CockroachDB)."""
    if postgres:
        return len(get_dbos_migrations(DBOS_SCHEMA, use_listen_notify=True))
    return len(sqlite_migrations)


async def register_turn_queue() -> None:
    """Register the turn queue with the launched DBOS, by its version rule."""
    await DBOS.register_queue_async(
        TURN_QUEUE,
        partition_concurrency=_PARTITION_CONCURRENCY,
        worker_concurrency=None,
        polling_interval_sec=POLLING_INTERVAL_SECONDS,
    )


def count_queued(engine: Engine, *, postgres: bool) -> int:
    """How many workflows wait on the turn queue, not started yet, on every worker: one
    count over DBOS's index of a queue's workflows by status (blocking)."""
    status = sa.table(
        "workflow_status",
        sa.column("queue_name"),
        sa.column("status"),
        schema=DBOS_SCHEMA if postgres else None,
    )
    query = (
        sa.select(sa.func.count())
        .select_from(status)
        .where(status.c.queue_name == TURN_QUEUE, status.c.status == "ENQUEUED")
    )
    with engine.connect() as c:
        return int(c.execute(query).scalar() or 0)
