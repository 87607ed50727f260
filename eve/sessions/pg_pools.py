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
REQUEST_OVERFLOW`` connections for eve's tables, DBOS's own pool (``DBOS_POOL``), and one
for the listener (``pg_listener.py``): PostgreSQL's ``max_connections`` must cover that
times the number of workers, plus any other client (docs/postgres.md).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

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
#: connections of one worker at most
PER_WORKER = BACKGROUND_POOL + BACKGROUND_OVERFLOW + REQUEST_POOL + REQUEST_OVERFLOW + DBOS_POOL + 1


def background_engine(url: str) -> Engine:
    """The engine of the turns' work (and of everything not answering a request)."""
    # no ping before each checkout (a round trip, a tenth of the worker's busy time under
    # load): a connection the database dropped fails its call, which waits the fault out
    # and tries again (``db_retry.py``) on a fresh one, as SQLAlchemy then replaces the
    # pool's connections older than the failure
    return sa.create_engine(url, pool_size=BACKGROUND_POOL, max_overflow=BACKGROUND_OVERFLOW)


def request_engine(url: str) -> Engine:
    """The engine of requests' transactions: the same database, connections of its own,
    each pinged as it is taken (a request fails at once rather than wait a fault out)."""
    return sa.create_engine(
        url, pool_size=REQUEST_POOL, max_overflow=REQUEST_OVERFLOW, pool_pre_ping=True
    )
