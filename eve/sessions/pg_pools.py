"""A worker's connections to PostgreSQL: eve's tables through two pools, one for the turns'
work and one for requests, so a request never waits for a connection behind the turns.

The pools are small on purpose. A worker is one process under one GIL, and every thread
in a transaction takes the GIL back after each round trip: with 30 connections busy, 30
threads took turns with the event loop, each transaction lasted longer for it, and a POST
waited 2 s at 500 live sessions (0.1 s with 12; turns per second and CPU per turn were the
same). A thread that waits for a connection sleeps, and costs nothing.

SQLAlchemy's pool hands a returned connection to the thread that has waited longest. Under
load hundreds of turns' threads wait for one of the background pool's connections, and a
request's transaction that joined them waited behind every one (seconds, at 500 live
sessions). A request's transactions (``fail_fast``: an HTTP request is being answered,
and what it starts right after its answer) take the request pool instead; its connections
are idle most of the time, which is the point.

Per worker, at most ``BACKGROUND_POOL + BACKGROUND_OVERFLOW + REQUEST_POOL +
REQUEST_OVERFLOW`` connections for eve's tables, DBOS's own pool (``DBOS_POOL``), the event
loop's eight for a message's claim (``LOOP_CONNECTIONS``), and one for the listener
(``pg_listener.py``): PostgreSQL's ``max_connections`` must cover that
times the number of workers, plus any other client (docs/postgres.md).
"""

from __future__ import annotations

import select
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DisconnectionError, InvalidatePoolError

#: the turns' pool. Every connection is opened as the load first asks for it and then kept:
#: SQLAlchemy closes an overflow connection as it is returned, so under a steady load the
#: overflow was opened and closed again all the time (a PostgreSQL process started each)
BACKGROUND_POOL = 12
BACKGROUND_OVERFLOW = 0
#: the requests' pool (the requests' threads are 32: ``thread_lanes.REQUEST_THREADS``)
REQUEST_POOL = 12
REQUEST_OVERFLOW = 0
#: DBOS's system database pool (its default is 20): ``dbos_config`` sets it
DBOS_POOL = 10
#: the event loop's own, for a message's claim (``pg_claim_now.py``): a claim holds one
#: until its commit is answered, and one that finds none free waits on the loop for the
#: first back (with 8, 99 % of the claims ran on the loop at 500 live sessions)
LOOP_CONNECTIONS = 8
#: connections of one worker at most
PER_WORKER = (
    BACKGROUND_POOL
    + BACKGROUND_OVERFLOW
    + REQUEST_POOL
    + REQUEST_OVERFLOW
    + DBOS_POOL
    + LOOP_CONNECTIONS
    + 1
)


def background_engine(url: str) -> Engine:
    """The engine of the turns' work (and of everything not answering a request)."""
    return _engine(url, pool_size=BACKGROUND_POOL, max_overflow=BACKGROUND_OVERFLOW)


def request_engine(url: str) -> Engine:
    """The engine of requests' transactions: the same database, connections of its own."""
    return _engine(url, pool_size=REQUEST_POOL, max_overflow=REQUEST_OVERFLOW)


def _engine(url: str, **pool: Any) -> Engine:
    engine = sa.create_engine(url, **pool)
    # a batch of rows is one INSERT … VALUES (…), (…) rather than psycopg's pipeline of one
    # INSERT a row: a third of the CPU at three rows, half at eight, and one statement, so
    # it may commit on its own (``each_commits``)
    engine.dialect.use_insertmanyvalues_wo_returning = True
    sa.event.listen(engine, "checkout", _refuse_closed)
    return engine


def _refuse_closed(driver: Any, _record: Any, _proxy: Any) -> None:
    """A pooled connection the server closed (a restart, a killed backend) is replaced as it
    is taken, so no call fails on it.

    Not with SQLAlchemy's ``pool_pre_ping``: a ``SELECT 1`` round trip before every
    transaction was a tenth of a worker's busy time under load. An idle connection has
    nothing to read unless the server ended it (its last words, then end of file), so one
    ``poll`` of the socket, with no wait, tells; a connection left in autocommit mode
    (``each_commits`` could not undo it) is not handed out either."""
    _refuse_if_closed(driver)
    if driver.autocommit:
        raise DisconnectionError("a connection left in autocommit mode")


def _refuse_if_closed(driver: Any, *_: Any) -> None:
    try:
        waiting = select.poll()
        waiting.register(driver.pgconn.socket, select.POLLIN)
        closed = bool(waiting.poll(0))
    except (psycopg.Error, OSError, ValueError):  # no socket: closed on this side
        closed = True
    if closed:
        # after a restart every connection opened before now is gone too: each is replaced
        # as it is taken (a killed backend costs its siblings a reconnect)
        raise InvalidatePoolError("the server closed the connection")


def checked_without_ping(engine: Engine) -> None:
    """Have ``engine``'s pool (DBOS's, made with ``pool_pre_ping`` off) replace a connection
    the server closed as ``_refuse_closed`` does, without a round trip. DBOS's connections'
    modes are DBOS's own: only a closed one is refused."""
    if not sa.event.contains(engine, "checkout", _refuse_if_closed):
        sa.event.listen(engine, "checkout", _refuse_if_closed)


@contextmanager
def each_commits(engine: Engine) -> Iterator[Connection]:
    """A connection of ``engine`` whose statements each commit as they run: no ``BEGIN``
    and ``COMMIT`` round trips (psycopg sends each as one), for work that is one statement,
    or reads (under PostgreSQL's default isolation, READ COMMITTED, each statement of a
    transaction reads what was committed when it started anyway). A third less of a
    worker's CPU for a one-statement transaction, and two round trips less.

    The connection goes back to the pool out of autocommit mode, or is closed."""
    with engine.connect() as connection:
        driver: Any = connection.connection.dbapi_connection
        driver.autocommit = True
        try:
            yield connection
        finally:
            if not connection.invalidated:
                try:
                    driver.autocommit = False
                except Exception:
                    connection.invalidate()  # never lent again as if it were transactional
