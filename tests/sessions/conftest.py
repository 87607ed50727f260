"""Fixtures for the session tests: a real PostgreSQL server, one fresh database per test."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from eve.sessions.store import SessionStore
from tests.postgres import REQUIRE_ENV, PostgresServer, PostgresUnavailable, find_bindir, required


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


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
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
