"""eve's record of its tables' version (``eve/sessions/schema_record.py``) and DBOS's of its
migrations: a start on a current schema sends no schema statement; an older database is
upgraded and recorded; one a newer eve wrote is refused; workers racing on a new or an
older database end with one schema (SQLite, and PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from eve.cli import main
from eve.errors import DatabaseTooNew
from eve.sessions import resolve_settings, tables
from eve.sessions.engine import dbos_config
from eve.sessions.schema_record import record_version, recorded_version, schema_versions
from eve.sessions.store import SessionStore
from eve.sessions.tables import TABLES_PART, TABLES_VERSION, sessions, tables_fingerprint
from eve.sessions.turn_queue import (
    DBOS_SCHEMA,
    TURN_QUEUE,
    dbos_migration_version,
    declare_turn_queue,
    queue_declared,
)
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.schema_statements import DBOS_VERSION_CHECK, schema_statements

#: the DDL of eve's tables at each version (``tables_fingerprint``), SQLite's then
#: PostgreSQL's: a change to the tables needs a new ``TABLES_VERSION`` and its line here
FINGERPRINTS = {
    1: (
        "39ac765dc5a6d41002a25c9ac128013ba4d46ccaf02b4dc0e5e80e56b53d5301",
        "a55e604afc54b6bf6ae963ac1ff119b9563bdc747b953aed50adb61390e31dd1",
    ),
}


def database_url(database: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if database == "sqlite":
        return f"sqlite:///{tmp_path / 'eve.sqlite'}"
    url: str = request.getfixturevalue("empty_postgres_url")
    return url


@contextmanager
def made(url: str) -> Iterator[sa.Engine]:
    """A database this eve made at ``url``, and a plain engine on it."""
    SessionStore(url).close()
    engine = sa.create_engine(url)
    try:
        yield engine
    finally:
        engine.dispose()


def database_env(database: str, request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment of an eve on ``database``: SQLite files by default, else a new
    PostgreSQL database."""
    if database == "sqlite":
        return {}
    return {"EVE_DATABASE_URL": request.getfixturevalue("empty_postgres_url")}


def test_the_tables_version_names_their_ddl() -> None:
    found = (tables_fingerprint("sqlite"), tables_fingerprint("postgresql"))
    assert FINGERPRINTS.get(TABLES_VERSION) == found, (
        "eve's tables changed: raise TABLES_VERSION (so a database made before gets the "
        f"change) and record {found} for it in FINGERPRINTS"
    )


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_new_database_records_the_version_of_its_tables(
    database: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with made(database_url(database, tmp_path, request)) as engine:
        assert recorded_version(engine, TABLES_PART) == TABLES_VERSION


def schema_of_a_start(root: Path, env: dict[str, str]) -> list[str]:
    """The schema statements of a server's start on ``root``; then a turn runs (the schema
    is whole)."""
    with schema_statements() as statements:
        server = InProcessServer(root, env=env).start()
    try:
        server.wait_for(server.create("hi"), count("session.waiting"))
    finally:
        server.stop()
    return statements


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_start_on_a_current_schema_sends_no_schema_statement(
    make_app: AppFactory, database: str, request: pytest.FixtureRequest
) -> None:
    env = database_env(database, request)
    root = scripted_app(make_app, [say("one"), say("two")], new_database=True)
    first = schema_of_a_start(root, env)
    # the counter sees the schema made: the upgrade's statements, DBOS's migrations
    assert any(s.startswith("CREATE TABLE eve_sessions") for s in first), first
    second = schema_of_a_start(root, env)
    # DBOS, launched with its migrations off, checks its version: one read, and nothing else
    assert [s for s in second if not DBOS_VERSION_CHECK.search(s)] == []
    assert len(second) == 1, second


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_database_at_an_older_version_is_upgraded_then_recorded(
    database: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = database_url(database, tmp_path, request)
    with made(url) as engine:
        with engine.begin() as c:
            c.execute(sa.text("DROP INDEX eve_sessions_cancel"))
            c.execute(sa.text("ALTER TABLE eve_sessions DROP COLUMN forked_from"))
        # the eve that opens it now knows a version after the one recorded
        monkeypatch.setattr(tables, "TABLES_VERSION", TABLES_VERSION + 1)
        with schema_statements() as upgrade:
            SessionStore(url).close()
        assert any("ADD COLUMN forked_from" in s for s in upgrade), upgrade
        inspector = sa.inspect(engine)
        assert "forked_from" in {c["name"] for c in inspector.get_columns(sessions.name)}
        assert "eve_sessions_cancel" in {i["name"] for i in inspector.get_indexes(sessions.name)}
        assert recorded_version(engine, TABLES_PART) == TABLES_VERSION + 1


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_database_a_newer_eve_wrote_is_refused_and_kept(
    database: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = database_url(database, tmp_path, request)
    with made(url) as engine:
        with engine.begin() as c:
            record_version(c, TABLES_PART, TABLES_VERSION + 1)
        with schema_statements() as statements, pytest.raises(DatabaseTooNew) as refused:
            SessionStore(url)
        assert (refused.value.part, refused.value.found) == (TABLES_PART, TABLES_VERSION + 1)
        assert refused.value.supported == TABLES_VERSION
        assert refused.value.exit_code == 2
        assert "a newer eve wrote it. Upgrade eve" in str(refused.value)
        assert statements == []  # not one column or index looked at
        # never a downgrade: not by the refusal, not by an older eve's record
        with engine.begin() as c:
            record_version(c, TABLES_PART, TABLES_VERSION)
        assert recorded_version(engine, TABLES_PART) == TABLES_VERSION + 1


def _older(url: str) -> None:
    """As an eve from before the record left it: no record, and a column it lacked."""
    with made(url) as engine, engine.begin() as c:
        c.execute(sa.text("ALTER TABLE eve_sessions DROP COLUMN forked_from"))
        c.execute(sa.text(f"DROP TABLE {schema_versions.name}"))


@pytest.mark.parametrize("before", [lambda _url: None, _older], ids=["new", "older"])
@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_workers_starting_at_once_end_with_one_schema(
    database: str,
    before: Callable[[str], None],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    url = database_url(database, tmp_path, request)
    before(url)
    workers = 4
    ready = threading.Barrier(workers)

    def open_store(_: int) -> None:
        ready.wait()
        SessionStore(url).close()

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(open_store, range(workers)))  # each opened it, none raised
    engine = sa.create_engine(url)
    try:
        assert recorded_version(engine, TABLES_PART) == TABLES_VERSION
        with engine.connect() as c:
            assert c.execute(sa.select(sa.func.count()).select_from(schema_versions)).scalar() == 1
        columns = {c["name"] for c in sa.inspect(engine).get_columns(sessions.name)}
        assert columns == {column.name for column in sessions.columns}
    finally:
        engine.dispose()


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_the_system_database_is_current_once_dbos_tables_and_the_queue_are_there(
    database: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    env = database_env(database, request)
    settings = resolve_settings(tmp_path, env=env)
    config = dbos_config(settings)
    engine = config.get("system_database_engine") or sa.create_engine(settings.eve_url)
    postgres = settings.is_postgres
    schema = f"{DBOS_SCHEMA}." if postgres else ""
    try:
        assert not queue_declared(engine, postgres=postgres)  # a new database: no tables
        declare_turn_queue(config)
        assert queue_declared(engine, postgres=postgres)
        with engine.begin() as c:
            c.execute(sa.text(f"UPDATE {schema}dbos_migrations SET version = version - 1"))
        assert not queue_declared(engine, postgres=postgres)  # behind this DBOS
        with engine.begin() as c:
            c.execute(
                sa.text(f"UPDATE {schema}dbos_migrations SET version = :v"),
                {"v": dbos_migration_version(postgres=postgres) + 1},
            )
        assert queue_declared(engine, postgres=postgres)  # a newer DBOS's: DBOS runs on it
        with engine.begin() as c:
            c.execute(sa.text(f"DELETE FROM {schema}queues WHERE name = :q"), {"q": TURN_QUEUE})
        assert not queue_declared(engine, postgres=postgres)  # no turn queue
    finally:
        engine.dispose()


def test_the_cli_refuses_a_database_a_newer_eve_wrote_with_exit_2(make_app: AppFactory) -> None:
    root = make_app()
    settings = resolve_settings(root, env={})
    with made(settings.eve_url) as engine, engine.begin() as c:
        record_version(c, TABLES_PART, TABLES_VERSION + 1)
    result = CliRunner().invoke(main, ["-C", str(root), "sessions", "fork", "ses_any"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("eve: the session database's tables are at version 2")
    assert "Traceback" not in result.output
