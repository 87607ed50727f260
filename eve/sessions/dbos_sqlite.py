"""DBOS's writes around every workflow, on SQLite, compiled once rather than at every call.

DBOS writes four statements per workflow: at its start the status row and the inputs (two
INSERTs, one transaction), at its end the status UPDATE and the output's upsert (one
transaction). On PostgreSQL it compiles each once (``SystemDatabase._execute_prepared``);
on SQLite it builds and compiles them at every call, the end's UPDATE included, which was
about half of DBOS's own CPU per workflow (bench/README.md, "DBOS's cost per turn").

``prepare_sqlite_writes`` makes SQLite take the PostgreSQL path: each statement is built
and compiled once per set of columns by the engine's own dialect, and each value goes
through its type's bind processor, so what reaches SQLite is what DBOS sent before. The
one difference is SQLite's positional parameters (``?``), filled in the compiled order.
The end keeps DBOS's rules: the output is written only when the status UPDATE lands on
the PENDING row this execution owns, in the same transaction.

Each poll of a queue (once a second for DBOS's own queue) also asks which application
version is the newest, a ``UNION`` DBOS builds afresh each time (``_latest_version``): it
is built once here, by DBOS's own code, and compiled once.

These are DBOS internals (``SystemDatabase._execute_prepared``,
``_update_workflow_outcome_in_transaction`` and ``_latest_application_version``), pinned by
``dbos>=3.4,<4`` and exercised by every session test; PostgreSQL and a caller's own
connection keep DBOS's code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast
from weakref import WeakKeyDictionary

import sqlalchemy as sa
from dbos._schemas import SCHEMA_PLACEHOLDER
from dbos._sys_db import SystemDatabase, WorkflowStatuses
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session

from eve.sessions.dbos_writes import combiner_of
from eve.sessions.prepared_sql import Prepared, compile_prepared, positional

_PREPARED: WeakKeyDictionary[SystemDatabase, dict[tuple[str, tuple[str, ...]], Prepared]] = (
    WeakKeyDictionary()
)
#: the newest-version query's SQL and parameters, by application name
_LATEST: WeakKeyDictionary[SystemDatabase, dict[str, tuple[str, tuple[Any, ...]]]] = (
    WeakKeyDictionary()
)
_DBOS_PREPARED = SystemDatabase._execute_prepared
_DBOS_OUTCOME = SystemDatabase._update_workflow_outcome_in_transaction
_DBOS_LATEST = SystemDatabase._latest_application_version


def prepare_sqlite_writes() -> None:
    """Install the override (idempotent); it acts only on a SQLite system database."""
    SystemDatabase._execute_prepared = _execute_prepared  # type: ignore[method-assign]
    SystemDatabase._update_workflow_outcome_in_transaction = _outcome  # type: ignore[method-assign]
    SystemDatabase._latest_application_version = _latest_version  # type: ignore[method-assign]


def _execute_prepared(
    self: SystemDatabase,
    conn: sa.Connection | Session,
    name: str,
    values: dict[str, Any],
    build: Callable[[], Any],
    *,
    insert_columns: bool = True,
) -> Any:
    connection = conn.connection() if isinstance(conn, Session) else conn
    if not self._is_sqlite or connection.dialect is not self.engine.dialect:
        return _DBOS_PREPARED(self, conn, name, values, build, insert_columns=insert_columns)
    cache = _PREPARED.setdefault(self, {})
    key = (name, tuple(values))
    prepared = cache.get(key)
    if prepared is None:
        prepared = cache[key] = _compile(self, build(), values, insert_columns=insert_columns)
    return connection.exec_driver_sql(prepared[0], positional(prepared, values))


def _compile(
    self: SystemDatabase, statement: Any, values: dict[str, Any], *, insert_columns: bool
) -> Prepared:
    """As DBOS compiles a hot statement for PostgreSQL, with SQLite's positional order."""
    return compile_prepared(
        statement,
        self.engine.dialect,
        list(values) if insert_columns else None,
        schema_translate_map={SCHEMA_PLACEHOLDER: self.schema},
    )


def _outcome(
    self: SystemDatabase,
    workflow_id: str,
    status: WorkflowStatuses,
    *,
    output: str | None,
    error: str | None,
    owner_xid: str | None,
) -> bool:
    """DBOS's two-statement end of a workflow, each statement prepared."""
    if not self._is_sqlite:
        return _DBOS_OUTCOME(
            self, workflow_id, status, output=output, error=error, owner_xid=owner_xid
        )
    write = outcome_write(
        self, workflow_id, status, output=output, error=error, owner_xid=owner_xid
    )

    def alone() -> bool:
        with self.engine.begin() as c:
            return write(c)

    # with other workflows' starts and ends that meet it (``dbos_writes.py``)
    return combiner_of(self.engine).run(write, alone)


def outcome_write(
    self: SystemDatabase,
    workflow_id: str,
    status: WorkflowStatuses,
    *,
    owner_xid: str | None,
    output: str | None = None,
    error: str | None = None,
) -> Callable[[sa.Connection], bool]:
    """DBOS's end of a workflow on SQLite, to run in a caller's transaction: whether it
    landed (the PENDING row this execution owns), its output written only then."""
    owned = owner_xid is not None
    keys = {"wf_id": workflow_id, "new_status": status, **({"owner": owner_xid} if owned else {})}
    output_values = {
        **self._wf_values(workflow_id),  # refuses a shard key, as DBOS's ``_wf`` does
        "workflow_uuid": workflow_id,
        "output": output,
        "error": error,
    }

    def write(c: sa.Connection) -> bool:
        name = "eve_update_outcome" + ("_owned" if owned else "")
        update = _execute_prepared(
            self, c, name, keys, lambda: _outcome_update(self, owned=owned), insert_columns=False
        )
        if update.rowcount == 0:
            # the outcome was not this execution's to write: no orphan output either
            return False
        _execute_prepared(self, c, "upsert_workflow_output", output_values, lambda: _upsert(self))
        return True

    return write


def _outcome_update(self: SystemDatabase, *, owned: bool) -> Any:
    """DBOS's status UPDATE of a finished workflow, with its values as bind parameters."""
    ws = self.tables.workflow_status
    now_ms = self._now_ms_sql()
    update = (
        sa.update(ws)
        .values(
            status=sa.bindparam("new_status", type_=ws.c.status.type),
            deduplication_id=None,
            owner_xid=None,
            updated_at=now_ms,
            completed_at=now_ms,
        )
        .where(ws.c.workflow_uuid == sa.bindparam("wf_id", type_=ws.c.workflow_uuid.type))
        .where(ws.c.status == "PENDING")
    )
    if owned:
        update = update.where(ws.c.owner_xid == sa.bindparam("owner", type_=ws.c.owner_xid.type))
    return update


def _upsert(self: SystemDatabase) -> Any:
    """DBOS's upsert of a workflow's output (``upsert_workflow_output``)."""
    insert = sqlite.insert(self.tables.workflow_output)
    return insert.on_conflict_do_update(
        index_elements=self._key_conflict("workflow_uuid"),
        set_={"output": insert.excluded.output, "error": insert.excluded.error},
    )


class _Capture:
    """Stands for a connection to take the statement DBOS builds, without running it."""

    statement: Any = None

    def execute(self, statement: Any) -> _Capture:
        self.statement = statement
        return self

    def fetchone(self) -> None:
        return None


def _latest_version(
    self: SystemDatabase, c: sa.Connection, application_name: str | None
) -> sa.Row[Any] | None:
    """DBOS's query for the newest application version, asked at every poll of a queue (the
    ``UNION`` of two subqueries a profile of an idle worker found first): built once, by
    DBOS's own code, and compiled once; it depends on nothing but the application's name."""
    if not self._is_sqlite or not application_name:
        return _DBOS_LATEST(self, c, application_name)
    cache = _LATEST.setdefault(self, {})
    prepared = cache.get(application_name)
    if prepared is None:
        capture = _Capture()
        _DBOS_LATEST(self, cast(sa.Connection, capture), application_name)
        compiled = _compile(self, capture.statement, {}, insert_columns=False)
        prepared = cache[application_name] = (compiled[0], positional(compiled, {}))
    sql, params = prepared
    row: sa.Row[Any] | None = c.exec_driver_sql(sql, params).fetchone()
    return row
