"""On PostgreSQL a request's transactions take a pool of their own, so a POST never waits
for a connection behind the turns' work; docs/postgres.md counts what a worker opens. Work
of one statement opens no transaction, and a connection the server closed is never lent."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from dbos._dbos import _get_dbos_instance
from sqlalchemy.engine import Connection

from eve.sessions.database_errors import fail_fast
from eve.sessions.pg_pools import PER_WORKER
from eve.sessions.store import EventRow, SessionStore
from eve.sessions.tables import sessions
from tests.conftest import AppFactory
from tests.postgres import PostgresServer
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer

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


def _store(url: str) -> SessionStore:
    return SessionStore("postgresql+psycopg://" + url.split("://", 1)[1])


def _status(c: Connection) -> str:
    """The driver's transaction status after a statement: IDLE once it committed."""
    c.execute(sa.text("SELECT 1"))
    return str(c.connection.dbapi_connection.info.transaction_status.name)  # type: ignore[union-attr]


def test_work_of_one_statement_commits_as_it_runs(postgres_url: str) -> None:
    """No BEGIN and COMMIT round trips around a read or a lone statement; a transaction
    still for the rest, on a connection back out of autocommit mode."""
    store = _store(postgres_url)
    try:
        assert store.read(_status) == "IDLE"
        assert store.run(_status, atomic=False) == "IDLE"
        assert store.run(_status) == "INTRANS"
        with fail_fast():  # a request's pool alike
            assert store.read(_status) == "IDLE"
            assert store.run(_status) == "INTRANS"
        # and what a lone statement wrote is there for others before the work returns
        store.create_session("ses_seen")

        def ended_and_seen(c: Connection) -> bool:
            c.execute(sessions.update().values(status="ended"))
            with store.request_engine.connect() as other:  # type: ignore[union-attr]
                return other.execute(sa.select(sessions.c.status)).scalar() == "ended"

        assert store.run(ended_and_seen, atomic=False)
    finally:
        store.close()


def test_a_connection_left_in_autocommit_mode_is_not_lent(postgres_url: str) -> None:
    store = _store(postgres_url)
    try:
        with store.engine.connect() as c:
            left = c.connection.dbapi_connection
            left.autocommit = True  # type: ignore[union-attr]
        assert store.run(_status) == "INTRANS"
        assert left.closed  # type: ignore[union-attr]
    finally:
        store.close()


def test_after_a_restart_no_call_meets_a_closed_connection(
    restartable_postgres: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Each pool's connections went with the server: taking one finds it closed (its socket
    has the server's last words to read) and opens a new one, with no round trip to
    ask; no call fails, none waits, nothing is logged."""
    store = _store(restartable_postgres.database())
    try:
        store.create_session("ses_restart")
        with fail_fast():
            assert store.get_session("ses_restart") is not None
        restartable_postgres.restart()
        with fail_fast():  # a request: a failure would be a 503
            assert store.get_session("ses_restart") is not None
        assert store.get_session("ses_restart") is not None
    finally:
        store.close()
    assert "out of reach" not in caplog.text


def test_a_lone_batch_at_a_taken_index_writes_none_of_its_rows(postgres_url: str) -> None:
    """The batch is one statement committed as it runs: all of it or none, as in a
    transaction; the connection is lent on as a transactional one."""
    store = _store(postgres_url)
    row = EventRow(workflow_id=None, body_seq=None, step_key=None, attempt=None, payload="{}")
    try:
        store.create_session("ses_taken")
        store.append_events("ses_taken", 0, [row, row])
        with pytest.raises(sa.exc.IntegrityError):
            store.append_events("ses_taken", 1, [row, row, row])  # index 1 is taken
        assert len(store.read_events("ses_taken", 0)) == 2
        assert store.run(_status) == "INTRANS"
    finally:
        store.close()


def test_dbos_s_pool_sends_no_ping_and_replaces_what_a_restart_closed(
    make_app: AppFactory, restartable_postgres: PostgresServer
) -> None:
    """DBOS's own pool is made without ``pool_pre_ping`` (a ``SELECT 1`` round trip before
    each of its transactions) and finds a closed connection by its socket, as eve's do: the
    first connection taken after a restart is a new one, where a kept one would fail its
    first statement (DBOS would log "Database connection failed" and wait a second). A
    transaction under way as the server stops fails either way; DBOS runs it again."""
    server = InProcessServer(
        scripted_app(make_app, [say("one"), say("two")]),
        env={"EVE_DATABASE_URL": restartable_postgres.database()},
    ).start()
    try:
        session = server.create("first")
        server.wait_for(session, count("session.waiting"))
        engine = _get_dbos_instance()._sys_db.engine
        assert engine.pool._pre_ping is False  # type: ignore[attr-defined]
        with engine.connect() as c:  # one kept in the pool, at least
            c.execute(sa.text("SELECT 1"))
        restartable_postgres.restart()
        with engine.connect() as c:
            assert c.execute(sa.text("SELECT 1")).scalar() == 1
        assert server.send(session, "second").status_code == 202
        server.wait_for(session, count("session.waiting", 2))
    finally:
        server.stop()
