"""On PostgreSQL a request's transactions take a pool of their own, so a POST never waits
for a connection behind the turns' work; docs/postgres.md counts what a worker opens."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Connection

from eve.sessions.database_errors import fail_fast
from eve.sessions.pg_pools import PER_WORKER
from eve.sessions.store import SessionStore

DOCS = Path(__file__).resolve().parents[2] / "docs" / "postgres.md"


def test_a_request_s_transaction_takes_the_requests_pool(postgres_url: str) -> None:
    store = SessionStore("postgresql+psycopg://" + postgres_url.split("://", 1)[1])
    try:
        assert store.request_engine is not None

        def checked_out(_: Connection) -> tuple[int, int]:
            assert store.request_engine is not None
            return store.engine.pool.checkedout(), store.request_engine.pool.checkedout()  # type: ignore[attr-defined]

        assert store.run(checked_out) == (1, 0)  # the turns' work
        with fail_fast():  # an HTTP request is being answered
            assert store.run(checked_out) == (0, 1)
    finally:
        store.close()


def test_the_docs_count_a_worker_s_connections() -> None:
    assert f"up to {PER_WORKER} connections" in DOCS.read_text()
    assert f"at least {PER_WORKER} × (workers on all hosts)" in DOCS.read_text()
