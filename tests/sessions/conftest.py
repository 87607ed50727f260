"""Fixtures for the session tests: a real PostgreSQL server, one fresh database per test."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from eve.sessions import db_retry, resolve_settings
from eve.sessions.engine import dbos_config
from eve.sessions.store import SessionStore
from eve.sessions.turn_queue import declare_turn_queue
from tests.postgres import REQUIRE_ENV, PostgresServer, PostgresUnavailable, find_bindir, required


@pytest.fixture(autouse=True)
def _no_outage_known() -> None:
    """Each test starts with no outage of the session database known: ``db_retry`` knows
    of one per process, and logs only its beginning and its end, so one that an earlier test
    of this worker left known (a fault given up on, no call working after it) kept the next
    test's outage from being said (seen: ``test_outage_log`` and ``test_pg_notifier`` after
    ``test_writer_failure_log``). A call that works ends it, as in eve."""
    db_retry.waited_out(lambda: None, deadline=math.inf, stopped=lambda: False)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole run, started on first use, stopped at the end.

    Without server binaries the tests that use it skip (run ``scripts/ensure-postgres``),
    unless ``EVE_REQUIRE_POSTGRES=1``, as under ``make test``: then they fail.
    """
    server = _started()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def restartable_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test's own, which it may restart or cut connections of."""
    server = _started()
    try:
        yield server
    finally:
        server.stop()


def _started() -> PostgresServer:
    bindir = find_bindir()
    if bindir is None:
        reason = (
            "no PostgreSQL server binaries (initdb, postgres) in /usr/lib/postgresql/*/bin "
            "or on PATH; run scripts/ensure-postgres to install them"
        )
        if required():
            pytest.fail(f"{REQUIRE_ENV}=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return started_from(bindir)


def started_from(bindir: Path) -> PostgresServer:
    """A server of the binaries in ``bindir``; the test fails when it cannot start."""
    started = time.monotonic()
    try:
        server = PostgresServer.start(bindir)
    except PostgresUnavailable as error:
        # the binaries are installed, so this is a broken setup, never a reason to skip
        pytest.fail(f"could not start PostgreSQL from {bindir}: {error}", pytrace=False)
    print(f"\n{server.version} on port {server.port} in {time.monotonic() - started:.1f}s")
    return server


@pytest.fixture(scope="session")
def postgres_schema(postgres_server: PostgresServer) -> str:
    """The name of a database holding the schema eve makes at its first start (its tables
    and their record, DBOS's tables and the turn queue's row), and nothing else: what
    ``postgres_url`` copies. Made once per server, it spares each test's first start the
    schema's 180 statements (a PostgreSQL start on a new database took 144 ms of CPU and
    373 ms, on a current one 52 and 103); a test about a new database uses
    ``empty_postgres_url``."""
    url = postgres_server.database("eve_schema")
    SessionStore(url).close()
    config = dbos_config(resolve_settings(Path.cwd(), env={"EVE_DATABASE_URL": url}))
    declare_turn_queue(config)
    # a template is copied only while no one is connected to it
    postgres_server.terminate_backends(url)
    return url.rsplit("/", 1)[-1]


@pytest.fixture
def postgres_url(postgres_server: PostgresServer, postgres_schema: str) -> Iterator[str]:
    """A ``postgresql://`` URL of a new database of its own for this test, holding eve's
    schema and no data (``postgres_schema``)."""
    url = postgres_server.database(template=postgres_schema)
    yield url
    postgres_server.drop(url)


@pytest.fixture
def empty_postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A ``postgresql://`` URL of a new, empty database of its own for this test."""
    url = postgres_server.database()
    yield url
    postgres_server.drop(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def either_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    """A ``SessionStore`` on a new SQLite file, then on a new PostgreSQL database."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'eve.sqlite'}"
    else:
        url = request.getfixturevalue("postgres_url")
    opened = SessionStore(url)
    yield opened
    opened.close()
