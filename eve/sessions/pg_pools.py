"""A worker's connections to PostgreSQL: eve's tables through two pools, one for the turns'
work and one for requests, so a request never waits for a connection behind the turns.

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

#: the turns' pool: kept open, and opened beyond that while the load asks for them
BACKGROUND_POOL = 10
BACKGROUND_OVERFLOW = 20
#: the requests' pool (the requests' threads are 32: ``thread_lanes.REQUEST_THREADS``)
REQUEST_POOL = 2
REQUEST_OVERFLOW = 14
#: DBOS's system database pool, DBOS's default (``dbos_config`` leaves it)
DBOS_POOL = 20
#: connections of one worker at most
PER_WORKER = BACKGROUND_POOL + BACKGROUND_OVERFLOW + REQUEST_POOL + REQUEST_OVERFLOW + DBOS_POOL + 1


def background_engine(url: str) -> Engine:
    """The engine of the turns' work (and of everything not answering a request)."""
    return sa.create_engine(
        url, pool_size=BACKGROUND_POOL, max_overflow=BACKGROUND_OVERFLOW, pool_pre_ping=True
    )


def request_engine(url: str) -> Engine:
    """The engine of requests' transactions: the same database, connections of its own."""
    return sa.create_engine(
        url, pool_size=REQUEST_POOL, max_overflow=REQUEST_OVERFLOW, pool_pre_ping=True
    )
