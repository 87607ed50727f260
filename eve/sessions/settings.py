"""Where durable sessions live: the embedded SQLite files under ``.eve/`` or PostgreSQL."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from eve import __version__
from eve.errors import DatabaseUnavailable, ServerConfigError

DATABASE_URL_ENV = "EVE_DATABASE_URL"
SYNCHRONOUS_ENV = "EVE_SQLITE_SYNCHRONOUS"
WORKER_TIMEOUT_ENV = "EVE_WORKER_TIMEOUT"
BUSY_TIMEOUT_ENV = "EVE_SQLITE_BUSY_TIMEOUT"
MAX_QUEUED_ENV = "EVE_MAX_QUEUED_TURNS"
TURN_LIMIT_ENV = "EVE_TURN_LIMIT"
LOOP_WRITES_ENV = "EVE_LOOP_WRITES"
DBOS_ON_LOOP_ENV = "EVE_DBOS_WRITES_ON_LOOP"
#: ``EVE_TURN_LIMIT`` read: adaptive, none, or a fixed number of places (``turn_limit.py``)
TurnLimitSetting = Literal["auto", "off"] | int
#: where the embedded databases live, under the app root; ignored by git and ``--check``
SESSIONS_DIR = ".eve/sessions"


@dataclass(frozen=True, kw_only=True)
class SessionSettings:
    """How this process reaches the session database and who it is among the workers."""

    #: DBOS's system database (workflows, steps, messages, queues)
    system_url: str
    #: eve's own tables (sessions, event log, input requests, workers), SQLAlchemy form
    eve_url: str
    #: a stable name for this worker; a restart with the same name recovers its turns
    executor_id: str
    #: workflows recover only in processes with the same workflow format (eve's version)
    application_version: str
    #: seconds without a heartbeat after which another worker adopts a worker's turns
    worker_timeout_seconds: float = 15.0
    #: SQLite's ``synchronous`` for both files: NORMAL (the default) or FULL (see sqlite.py)
    sqlite_synchronous: str = "NORMAL"
    #: seconds a write waits for another's lock on either SQLite file before a request
    #: answers 503 (``StorageFailed``, kind ``locked``)
    sqlite_busy_timeout: float = 30.0
    #: turns waiting in the durable queue past which a new message is refused with 503
    #: (``QueueFull``); None: no limit
    max_queued_turns: int | None = None
    #: places (turns, resets, compactions) running at once in a worker: ``off``, ``auto``
    #: (from the event loop's lag and the process's CPU), or a fixed number (``turn_limit.py``)
    turn_limit: TurnLimitSetting = "off"
    #: on SQLite, the turns' groupable writes run on the event loop's thread when eve's file
    #: is free at once (``loop_writes.py``); off: all in the writer lane's thread
    loop_writes: bool = False
    #: a workflow's start and end writes on the serving loop's thread when DBOS's SQLite
    #: file is free at once (``dbos_loop_writes.py``); never on PostgreSQL
    dbos_writes_on_loop: bool = True

    @property
    def is_postgres(self) -> bool:
        return self.system_url.startswith("postgresql")


def url_variable(url_env: str | None) -> str:
    """The environment variable the database URL is read from."""
    return url_env or DATABASE_URL_ENV


def resolve_settings(
    app_root: Path,
    *,
    env: Mapping[str, str] = os.environ,
    url_env: str | None = None,
    executor_id: str | None = None,
) -> SessionSettings:
    """Settings from the environment: ``url_env`` (from agent.py) or ``EVE_DATABASE_URL``."""
    name = url_variable(url_env)
    url = env.get(name, "").strip()
    # not the agent's fingerprint: a turn replays its recorded parts as values, so a turn
    # parked or queued before agent/ changed goes on under the new code; only a change in
    # how eve's workflows are shaped (a new eve) must not replay old records
    version = f"eve{__version__}"
    worker = executor_id or env.get("EVE_WORKER_ID") or f"{socket.gethostname()}-0"
    timeout = _worker_timeout(env.get(WORKER_TIMEOUT_ENV, "15"))
    max_queued = max_queued_turns(env.get(MAX_QUEUED_ENV, ""))
    limit = turn_limit(env.get(TURN_LIMIT_ENV, ""))
    if not url:
        directory = (app_root / SESSIONS_DIR).resolve()
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise DatabaseUnavailable(
                f"cannot create the session directory {directory}: {error.strerror or error}"
            ) from None
        return SessionSettings(
            system_url=f"sqlite:///{directory / 'dbos.sqlite'}",
            eve_url=f"sqlite:///{directory / 'eve.sqlite'}",
            executor_id=worker,
            application_version=version,
            worker_timeout_seconds=timeout,
            max_queued_turns=max_queued,
            turn_limit=limit,
            sqlite_synchronous=_synchronous(env.get(SYNCHRONOUS_ENV, "NORMAL")),
            sqlite_busy_timeout=_busy_timeout(env.get(BUSY_TIMEOUT_ENV, "30")),
            loop_writes=loop_writes(env.get(LOOP_WRITES_ENV, "")),
            dbos_writes_on_loop=dbos_writes_on_loop(env.get(DBOS_ON_LOOP_ENV, "")),
        )
    if not url.startswith(("postgresql://", "postgres://")):
        raise DatabaseUnavailable(
            f"{name} must be a postgresql:// URL (leave it unset for the embedded SQLite)"
        )
    url = "postgresql://" + url.split("://", 1)[1]
    return SessionSettings(
        system_url=url,
        eve_url="postgresql+psycopg://" + url.split("://", 1)[1],
        executor_id=worker,
        application_version=version,
        worker_timeout_seconds=timeout,
        max_queued_turns=max_queued,
        turn_limit=limit,
    )


def _worker_timeout(raw: str) -> float:
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise ServerConfigError(
            f"{WORKER_TIMEOUT_ENV} must be a number of seconds > 0, not {raw!r}"
        )
    return seconds


def _busy_timeout(raw: str) -> float:
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 3600:
        raise ServerConfigError(f"{BUSY_TIMEOUT_ENV} must be seconds from 0 to 3600, not {raw!r}")
    return seconds


def _synchronous(raw: str) -> str:
    level = raw.strip().upper() or "NORMAL"
    if level not in ("NORMAL", "FULL"):
        raise ServerConfigError(f"{SYNCHRONOUS_ENV} must be NORMAL or FULL, not {raw!r}")
    return level


def max_queued_turns(raw: str) -> int | None:
    """``EVE_MAX_QUEUED_TURNS`` (or ``--max-queued-turns``) read: unset, empty or ``off`` is
    no limit."""
    value = raw.strip().lower()
    if value in ("", "off"):
        return None
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise ServerConfigError(
            f"{MAX_QUEUED_ENV} must be a whole number of turns >= 1 (or off), not {raw!r}"
        )
    return int(value)


def dbos_writes_on_loop(raw: str) -> bool:
    """``EVE_DBOS_WRITES_ON_LOOP`` read: unset, empty or ``on`` is on; ``off`` runs every
    write of DBOS's in a thread."""
    return _on_or_off(DBOS_ON_LOOP_ENV, raw)


def turn_limit(raw: str) -> TurnLimitSetting:
    """``EVE_TURN_LIMIT`` read: unset, empty or ``off`` is no limit."""
    value = raw.strip().lower()
    if value in ("", "off"):
        return "off"
    if value == "auto":
        return "auto"
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise ServerConfigError(
            f"{TURN_LIMIT_ENV} must be auto, off or a whole number of turns >= 1, not {raw!r}"
        )
    return int(value)


def loop_writes(raw: str) -> bool:
    """``EVE_LOOP_WRITES`` read: unset, empty or ``on`` runs the turns' groupable writes on
    the event loop's thread when eve's SQLite file is free (``loop_writes.py``); ``off``
    leaves them all to the writer lane's thread. PostgreSQL has no writer lane: there it is
    never on."""
    return _on_or_off(LOOP_WRITES_ENV, raw)


def _on_or_off(name: str, raw: str) -> bool:
    """The setting ``name``'s value ``raw``: unset, empty or ``on`` is True (eve's default),
    ``off`` False; ``ServerConfigError`` for anything else."""
    value = raw.strip().lower()
    if value in ("", "on"):
        return True
    if value == "off":
        return False
    raise ServerConfigError(f"{name} must be on or off (eve's default on), not {raw!r}")
