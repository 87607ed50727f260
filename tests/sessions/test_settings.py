"""Where sessions live and how the environment configures them; bad values are named errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from eve import __version__
from eve.cli.main import main
from eve.errors import DatabaseUnavailable, ServerConfigError
from eve.sessions import resolve_settings
from eve.sessions.sqlite import sqlite_engine
from eve.sessions.store import SessionStore
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app


def test_the_default_is_two_sqlite_files_under_dot_eve(tmp_path: Path) -> None:
    settings = resolve_settings(tmp_path, env={})
    sessions = (tmp_path / ".eve/sessions").resolve()
    assert settings.system_url == f"sqlite:///{sessions / 'dbos.sqlite'}"
    assert settings.eve_url == f"sqlite:///{sessions / 'eve.sqlite'}"
    assert settings.sqlite_synchronous == "NORMAL" and not settings.is_postgres
    assert settings.application_version == f"eve{__version__}"  # not the agent's sources


def test_a_postgres_url_moves_both_and_agent_py_may_name_the_variable(tmp_path: Path) -> None:
    env = {"MY_DB": "postgres://eve@db.internal/eve"}
    settings = resolve_settings(tmp_path, env=env, url_env="MY_DB")
    assert settings.system_url == "postgresql://eve@db.internal/eve"
    assert settings.eve_url == "postgresql+psycopg://eve@db.internal/eve"
    assert settings.is_postgres
    with pytest.raises(DatabaseUnavailable, match="must be a postgresql:// URL"):
        resolve_settings(tmp_path, env={"EVE_DATABASE_URL": "mysql://x"})


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("EVE_WORKER_TIMEOUT", "soon", "EVE_WORKER_TIMEOUT must be a number of seconds > 0"),
        ("EVE_WORKER_TIMEOUT", "0", "EVE_WORKER_TIMEOUT must be a number of seconds > 0"),
        ("EVE_SQLITE_SYNCHRONOUS", "OFF", "EVE_SQLITE_SYNCHRONOUS must be NORMAL or FULL"),
    ],
)
def test_bad_values_are_refused(tmp_path: Path, name: str, value: str, message: str) -> None:
    with pytest.raises(ServerConfigError, match=message):
        resolve_settings(tmp_path, env={name: value})


@pytest.mark.parametrize(("level", "pragma"), [("NORMAL", 1), ("FULL", 2)])
def test_both_files_are_wal_with_the_chosen_sync(tmp_path: Path, level: str, pragma: int) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}", synchronous=level)
    system = sqlite_engine(
        f"sqlite:///{tmp_path / 'dbos.sqlite'}", synchronous=level, immediate=True
    )
    try:
        for engine in (store.engine, system):
            with engine.connect() as connection:
                assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
                assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == pragma
        with system.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        store.close()
        system.dispose()


def test_eve_serve_exits_2_on_a_bad_setting(make_app: AppFactory) -> None:
    # refused before anything starts: the command runs in this process
    root = scripted_app(make_app, [say("hi")])
    done = CliRunner().invoke(
        main, ["-C", str(root), "serve", "--port", "0"], env={"EVE_WORKER_TIMEOUT": "soon"}
    )
    assert done.exit_code == ServerConfigError.exit_code == 2, done.output
    assert "EVE_WORKER_TIMEOUT must be a number of seconds > 0, not 'soon'" in done.output
