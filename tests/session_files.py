"""A new app's SQLite session files, made once per test process and copied into each app that
``make_app`` builds.

A service's first start on an app makes its two SQLite files: eve's tables and their record
(``eve.sqlite``) and DBOS's tables with the turn queue's row (``dbos.sqlite``), some 110
statements. A suite run started about 290 services on a new app, each paying that again
(measured in process: a start on a new app 82 ms of CPU, on these files 36 ms). The files
made here hold that schema and no data, so a test's first start finds it current, as a
deployment's later starts do; ``postgres_schema`` (``tests/sessions/conftest.py``) does the
same for PostgreSQL. A test of what a start does on a new app asks for none
(``make_app(..., new_database=True)``), as one of a new PostgreSQL database takes
``empty_postgres_url``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from eve.sessions import resolve_settings
from eve.sessions.engine import dbos_config
from eve.sessions.settings import SESSIONS_DIR
from eve.sessions.store import SessionStore
from eve.sessions.turn_queue import declare_turn_queue
from eve.sessions.wal_checkpoints import dispose_engine


def make_session_files(app_root: Path) -> Path:
    """Make the session files of a new app at ``app_root`` as its first start would; the
    directory that holds them."""
    settings = resolve_settings(app_root, env={})  # the embedded SQLite, whatever is set
    SessionStore(settings.eve_url).close()
    config = dbos_config(settings)
    try:
        declare_turn_queue(config)
    finally:
        engine = config.get("system_database_engine")
        assert engine is not None  # SQLite: the engine eve makes for DBOS
        dispose_engine(engine)  # its checkpoints ended first: none holds the file
    directory = app_root / SESSIONS_DIR
    # every connection closed: each file holds all it wrote, with no write-ahead log beside
    # it that a copy of the file alone would leave behind
    names = sorted(path.name for path in directory.iterdir())
    assert names == ["dbos.sqlite", "eve.sqlite"], names
    return directory


def copy_session_files(made: Path, app_root: Path) -> None:
    """Put a copy of the files ``make_session_files`` made into ``app_root``."""
    directory = app_root / SESSIONS_DIR
    directory.mkdir(parents=True)
    for path in made.iterdir():
        shutil.copyfile(path, directory / path.name)
