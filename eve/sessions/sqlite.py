"""SQLite engines for both session files: WAL, so readers never block the writer.

In WAL mode ``synchronous=NORMAL`` syncs at checkpoints rather than at every commit: a
process crash (SIGKILL included) loses nothing, while a power cut or OS crash can roll back
the last commits before a checkpoint. A step whose record is rolled back that way re-runs,
exactly as a step interrupted mid-way does. ``EVE_SQLITE_SYNCHRONOUS=FULL`` syncs every
commit instead (its cost per step is measured in bench/README.md). The checkpoints run on a
thread of their own (``wal_checkpoints.py``), never in a writer's commit.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from eve._sql_engines import sqlite_engine as shared_sqlite_engine
from eve.sessions.database_errors import refuse_lock_in_request
from eve.sessions.sqlite_gate import SqliteGate, gate_writes
from eve.sessions.sqlite_requests import request_signal
from eve.sessions.wal_checkpoints import NO_AUTOCHECKPOINT, checkpoint_in_background

#: connections an engine opens at most, all kept open: SQLAlchemy closes a connection above
#: ``pool_size`` as soon as it is returned, so an overflow is opened (its PRAGMAs run) and
#: closed again on every use under load (40% of a loaded server's samples in one profile)
POOL_SIZE = 64
#: how long a write of DBOS's waits for the gate before it goes on to SQLite's own lock: a
#: writer holds its pooled connection while it waits, so under hundreds of writers a long
#: wait would empty the pool and stall everyone behind it (``sqlite_gate.gate_writes``)
GATE_PATIENCE_SECONDS = 0.2


def sqlite_engine(
    url: str,
    *,
    synchronous: str = "NORMAL",
    immediate: bool = False,
    busy_timeout: float = 30.0,
) -> Engine:
    """An engine on the SQLite file at ``url``.

    ``immediate`` is for DBOS's system database, which eve hands DBOS ready-made: it sets
    what DBOS's own SQLite engine sets (``BEGIN IMMEDIATE`` to serialize writers, foreign
    keys on) besides the journal settings. A write that waits ``busy_timeout`` seconds for
    another's lock fails; during a request it fails for good (``fail_fast``), where DBOS
    would retry it for as long as the lock is held.
    """
    pragmas = [
        f"synchronous={synchronous}",
        # checkpoints run on a thread of their own, never in a writer's commit
        NO_AUTOCHECKPOINT,
        *(["foreign_keys=ON"] if immediate else []),
    ]

    def isolate(connection: Any) -> None:
        if immediate:
            connection.isolation_level = "IMMEDIATE"

    # DBOS's executor (the loop's default) has no thread limit, so a burst of steps uses
    # many connections at once; SQLAlchemy's default keeps 5 and opens up to 10 more, each
    # closed again as soon as it is returned
    engine = shared_sqlite_engine(
        url, busy_timeout=busy_timeout, pragmas=pragmas, prepare=isolate, pool_size=POOL_SIZE
    )
    sa.event.listen(engine, "handle_error", refuse_lock_in_request)
    checkpoint_in_background(engine)
    if immediate:
        # DBOS's writers queue in this process rather than sleep in SQLite's busy handler
        patience = min(busy_timeout, GATE_PATIENCE_SECONDS)
        gate_writes(engine, SqliteGate(), patience=patience, busy_timeout=busy_timeout)
    return engine


def store_gate(engine: Engine) -> SqliteGate:
    """The gate of eve's file on ``engine``, with the signal every process on the file
    gives its waiting requests (``sqlite_requests.py``), closed with the engine."""
    signal = request_signal(engine.url.database)
    if signal is not None:
        sa.event.listen(engine, "engine_disposed", lambda _engine: signal.close())
    return SqliteGate(signal=signal)
