"""The memory tests' PostgreSQL: the session tests' server (Debian's, without pgvector), and
pgserver's PostgreSQL 16 with pgvector; one fresh database per test on either."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy.engine import Engine

from eve.auth.principal import PrincipalRef
from eve.memory.records import MemoryKey, SlotKey
from tests.postgres import (
    REQUIRE_ENV,
    PostgresServer,
    pgserver_bindir,
    pgserver_expected,
    required,
)
from tests.sessions.conftest import postgres_schema, postgres_server, postgres_url, started_from

__all__ = [
    "ALICE",
    "ALICE_KEY",
    "BOB",
    "BOB_KEY",
    "SLOT",
    "at_once",
    "entry_row",
    "login_role",
    "pgvector_server",
    "pgvector_url",
    "postgres_schema",
    "postgres_server",
    "postgres_url",
]


#: a principal-scoped slot and two principals' scopes of it
SLOT = SlotKey(namespace="shop", node_id="__root__", slot="notes", scope="principal")
ALICE, BOB = PrincipalRef(id="alice", kind="user"), PrincipalRef(id="bob", kind="user")
ALICE_KEY, BOB_KEY = (
    MemoryKey(slot=SLOT, owner="user:alice"),
    MemoryKey(slot=SLOT, owner="user:bob"),
)


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[PostgresServer]:
    """pgserver's PostgreSQL 16, whose pgvector is available to create, for the whole run.

    Skips where pgserver ships no wheel (not Linux x86_64 or macOS, or CPython 3.13+);
    where it does and the dev extra left it out, fails under ``EVE_REQUIRE_POSTGRES=1``.
    """
    bindir = pgserver_bindir()
    if bindir is None:
        reason = "pgserver (PostgreSQL 16 with pgvector) is not installed"
        if not pgserver_expected():
            pytest.skip(f"{reason}: it ships no wheel for this platform and Python")
        if required():
            pytest.fail(f"{REQUIRE_ENV}=1 but {reason}; pip install -e '.[dev]'", pytrace=False)
        pytest.skip(f"{reason}; pip install -e '.[dev]'")
    server = started_from(bindir)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pgvector_url(pgvector_server: PostgresServer) -> Iterator[str]:
    """A ``postgresql://`` URL of a new, empty database on the pgvector server."""
    url = pgvector_server.database()
    yield url
    pgvector_server.drop(url)


def login_role(admin: Engine, url: str, *grants: str) -> str:
    """A new login role with ``grants`` (SQL, ``{role}`` for its name); the URL of
    ``url``'s database as it."""
    role = f"eve_app_{secrets.token_hex(4)}"
    with admin.begin() as c:
        c.exec_driver_sql(f"CREATE ROLE {role} LOGIN")
        for grant in grants:
            c.exec_driver_sql(grant.format(role=role))
    return url.replace("postgresql://postgres@", f"postgresql+psycopg://{role}@")


def at_once(engines: list[Engine], work: Callable[[Engine], None]) -> list[BaseException]:
    """Run ``work`` on each engine in a thread of its own, all released together (workers
    starting at the same moment); what each raised."""
    together = threading.Barrier(len(engines))
    failed: list[BaseException] = []

    def run(engine: Engine) -> None:
        together.wait()
        try:
            work(engine)
        except BaseException as error:
            failed.append(error)

    workers = [threading.Thread(target=run, args=(e,)) for e in engines]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return failed


def entry_row(id: str, text: str, owner: str = "user:alice") -> dict[str, object]:
    """An ``eve_memories`` row of ``SLOT`` owned by ``owner`` (``kind:id``), written
    directly (as an earlier eve's rows are)."""
    kind, principal = owner.split(":")
    return {
        "id": id,
        "namespace": SLOT.namespace,
        "node_id": SLOT.node_id,
        "slot": SLOT.slot,
        "scope": SLOT.scope,
        "owner": owner,
        "principal_kind": kind,
        "principal_id": principal,
        "session_id": "s0",
        "text": text,
        "metadata": "{}",
        "created_at": 1.0,
        "updated_at": 1.0,
    }
