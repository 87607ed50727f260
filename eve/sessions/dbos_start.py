"""DBOS's start of a workflow and the wrapper around its body, made cheaper where eve runs
one per turn.

Three narrow overrides of DBOS internals, pinned by ``dbos>=3.4,<4`` and exercised by every
session test (``tests/sessions/test_dbos_start.py`` reads what they write back through
DBOS's own API):

- **The "self" check, once per function.** At every start DBOS asks whether a plain
  function's first parameter is named ``self`` (a method registered wrongly), twice (for
  the class name and the configured instance name), each through ``inspect.signature``: a
  tenth of a millisecond of every turn, for an answer that depends on the function alone.
  It is now found once per function; what DBOS answers and raises is unchanged.
- **A start in one statement on PostgreSQL.** DBOS records a workflow's status and inputs
  in a transaction of two INSERTs: four round trips (BEGIN, two statements, COMMIT). As
  DBOS already does for a workflow's end (``update_workflow_outcome``), the two are one
  statement here, run in autocommit: the inputs' INSERT reads the status INSERT's returned
  row and writes only when this call created it, so a start that finds the workflow there
  (the same id started again, which eve does after a crash) writes nothing, as before.
  DBOS's checks of that row (another function under the id, another queue) are its own,
  made on the row returned. Only for a plain start (no queue deduplication id, no reuse
  policy, an unsharded database); SQLite cannot run an INSERT in a ``WITH`` clause and
  keeps DBOS's transaction (``dbos_sqlite.py`` compiles it once).
- **No idle thread hop around a body.** DBOS chains a coroutine to what follows it (a
  workflow body to the write of its outcome, a step to its record) with
  ``Pending.then(next)``, which runs ``lambda: next`` in a thread only to get ``next``
  back: a round trip through the thread pool per workflow and per step that does nothing.
  ``then`` here calls ``next`` as DBOS's ``_wrap`` then does, with the hop left out. A
  workflow's end there writes on the event loop's thread when it may
  (``dbos_loop_start.py``), as its start does.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar, cast

import dbos._core as dbos_core
import sqlalchemy as sa
from dbos._error import DBOSConflictingWorkflowError
from dbos._logger import dbos_logger
from dbos._outcome import DeferredResult, Pending
from dbos._registrations import DBOSFuncInfo, DBOSFuncType, get_config_name, get_dbos_class_name
from dbos._sys_db import SystemDatabase, WorkflowStatuses, WorkflowStatusInternal, db_retry

from eve.sessions.dbos_loop_start import WorkflowEnd, prepare_loop_writes
from eve.sessions.dbos_writes import combiner_of
from eve.sessions.pg_pools import checked_without_ping

_DBOS_CLASS_NAME = get_dbos_class_name
_DBOS_CONFIG_NAME = get_config_name
_DBOS_INIT = SystemDatabase.init_workflow
T = TypeVar("T")
R = TypeVar("R")
if TYPE_CHECKING:
    from dbos import DBOS
#: the status row's columns DBOS checks when a start finds the workflow there
_RETURNED = ("status", "name", "class_name", "config_name", "queue_name", "creator_xid")
#: the columns that must match, as DBOS's error names them
_CHECKED = {"name": "function name", "class_name": "class name", "config_name": "config name"}


#: DBOS's engine on PostgreSQL, with no ``SELECT 1`` before each of its transactions (a round
#: trip, and on a worker under load a thread's hand-off of the interpreter's lock):
#: ``checked_without_ping`` finds a closed connection by its socket instead
DBOS_ENGINE_KWARGS: dict[str, Any] = {"pool_pre_ping": False}


def without_pings(dbos: DBOS) -> None:
    """After launch: DBOS's pool, made with ``DBOS_ENGINE_KWARGS``, replaces a connection the
    server closed (a restart) as it is taken, as eve's do (``pg_pools.py``). A statement
    that meets one closed meanwhile fails as it would have after a ping, and DBOS's own
    retry (``db_retry``) runs it again on a fresh one. (DBOS's engine, pinned by ``dbos<4``.)"""
    engine = dbos._sys_db.engine
    if engine.dialect.name == "postgresql":
        checked_without_ping(engine)


def prepare_workflow_starts() -> None:
    """Install the overrides (idempotent), and those that may run a workflow's start and
    end writes on the loop (``dbos_loop_start.py``)."""
    dbos_core.get_dbos_class_name = _class_name  # type: ignore[attr-defined]
    dbos_core.get_config_name = _config_name  # type: ignore[attr-defined]
    SystemDatabase.init_workflow = _init_workflow  # type: ignore[method-assign]
    Pending.then = _then  # type: ignore[method-assign]
    prepare_loop_writes()


def _then(
    self: Pending[T], next: Callable[[Callable[[], T]], R], *, dbos: DBOS | None = None
) -> Pending[R]:
    return Pending[R](lambda: _chained(self._func, next, dbos=dbos))


async def _chained(
    func: Callable[[], Coroutine[Any, Any, T]],
    after: Callable[[Callable[[], T]], R],
    *,
    dbos: DBOS | None,
) -> R:
    """DBOS's ``Pending._wrap`` with ``before`` known to be ``lambda: after``."""
    if dbos is not None:
        await dbos._configure_asyncio_thread_pool()
    try:
        value = await func()
        if isinstance(after, WorkflowEnd):  # a workflow's end: its write on the loop if it may
            result = cast(R, await after.returned(value))
        else:
            result = await asyncio.to_thread(after, lambda: value)
    except asyncio.CancelledError:
        dbos_logger.warning(f"Asyncio task cancelled for workflow or step {func}")
        raise
    except BaseException as exp:
        raised = exp
        result = await asyncio.to_thread(after, lambda: Pending._raise(raised))
    if isinstance(result, DeferredResult):
        return cast(R, await result.resolve_async())
    return result


@functools.cache
def _takes_self(func: Callable[..., Any]) -> bool:
    parameters = list(inspect.signature(func).parameters.values())
    return bool(parameters) and parameters[0].name == "self"


def _plain(fi: DBOSFuncInfo | None, func: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    """Whether DBOS's answer is None with no error: a plain function, called with a first
    argument that is no class, whose first parameter is not ``self``."""
    unregistered = fi is None or fi.func_type == DBOSFuncType.Unknown
    return unregistered and (not args or not isinstance(args[0], type)) and not _takes_self(func)


def _class_name(
    fi: DBOSFuncInfo | None, func: Callable[..., Any], args: tuple[Any, ...]
) -> str | None:
    return None if _plain(fi, func, args) else _DBOS_CLASS_NAME(fi, func, args)


def _config_name(
    fi: DBOSFuncInfo | None, func: Callable[..., Any], args: tuple[Any, ...]
) -> str | None:
    return None if _plain(fi, func, args) else _DBOS_CONFIG_NAME(fi, func, args)


@db_retry()
def _init_workflow(
    self: SystemDatabase,
    status: WorkflowStatusInternal,
    *,
    creator_xid: str | None,
    reuse_policy: Any = None,
) -> tuple[WorkflowStatuses, bool]:
    plain = (
        not self._is_sqlite
        and reuse_policy is None
        and status["deduplication_id"] is None
        and status["shard_key"] is None
        and not self._wf_values(status["workflow_uuid"])
    )

    def alone() -> tuple[WorkflowStatuses, bool]:
        # db_retry's own retries wrap DBOS's (the unwrapped method runs once per try)
        return _DBOS_INIT.__wrapped__(  # type: ignore[attr-defined,no-any-return]
            self, status, creator_xid=creator_xid, reuse_policy=reuse_policy
        )

    if self._is_sqlite:
        # DBOS's ``init_workflow`` is its ``_insert_workflow_status`` in a transaction of
        # its own; here with other workflows' starts and ends that meet it (dbos_writes.py)
        return combiner_of(self.engine).run(
            lambda c: self._insert_workflow_status(
                status, c, creator_xid=creator_xid, reuse_policy=reuse_policy
            ),
            alone,
        )
    if creator_xid is None or not plain:
        return alone()
    values = _status_values(status, creator_xid) | {"inputs": status["inputs"]}
    with self.engine.connect() as c:
        c.execution_options(isolation_level="AUTOCOMMIT")
        row = self._execute_prepared(
            c,
            "eve_start_workflow",
            values,
            lambda: _start_statement(self, list(values)),
            insert_columns=False,
        ).fetchone()
    assert row is not None, "the status INSERT returns its row, new or found"
    found = row._mapping
    _check_found(status, found)
    status["serialization"] = found["serialization"]
    return found["status"], found["creator_xid"] == creator_xid


def _status_values(status: WorkflowStatusInternal, creator_xid: str) -> dict[str, Any]:
    """The status row's values, as DBOS's ``_insert_workflow_status`` writes them."""
    pending = status["status"] == "PENDING"
    return {
        "workflow_uuid": status["workflow_uuid"],
        "status": status["status"],
        "name": status["name"],
        "class_name": status["class_name"],
        "config_name": status["config_name"],
        "executor_id": status["executor_id"],
        "application_version": status["app_version"],
        "application_id": status["app_id"],
        "authenticated_user": status["authenticated_user"],
        "authenticated_roles": status["authenticated_roles"],
        "assumed_role": status["assumed_role"],
        "queue_name": status["queue_name"],
        "recovery_attempts": 1 if status["status"] not in ("ENQUEUED", "DELAYED") else 0,
        "workflow_timeout_ms": status["workflow_timeout_ms"],
        "workflow_deadline_epoch_ms": status["workflow_deadline_epoch_ms"],
        "deduplication_id": status["deduplication_id"],
        "priority": status["priority"],
        "serialization": status["serialization"],
        "queue_partition_key": status["queue_partition_key"],
        "parent_workflow_id": status["parent_workflow_id"],
        "creator_xid": creator_xid,
        # a direct start runs at once, so its creator token also owns the execution
        "owner_xid": creator_xid if pending else None,
        "delay_until_epoch_ms": status["delay_until_epoch_ms"],
        "attributes": status["attributes"],
        "schedule_name": status["schedule_name"],
        "debounce_deadline_epoch_ms": status["debounce_deadline_epoch_ms"],
        "is_debounced": status["is_debounced"],
        "application_name": status["application_name"],
    }


def _start_statement(self: SystemDatabase, names: list[str]) -> Any:
    """The status INSERT (a found row comes back unchanged) and, reading its returned row,
    the inputs' INSERT when this call created it; selects the returned row."""
    ws, wi = self.tables.workflow_status, self.tables.workflow_input
    columns = [n for n in names if n != "inputs"]
    params = {n: sa.bindparam(n, type_=ws.c[n].type) for n in columns}
    insert = self.dialect.insert(ws).values(params)
    started = (
        insert.on_conflict_do_update(
            index_elements=self._key_conflict("workflow_uuid"),
            set_={"creator_xid": ws.c.creator_xid},
        )
        .returning(*[ws.c[n] for n in _RETURNED], ws.c.serialization)
        .cte("started")
    )
    inputs = (
        self.dialect.insert(wi)
        .from_select(
            ["workflow_uuid", "inputs"],
            sa.select(params["workflow_uuid"], sa.bindparam("inputs", type_=wi.c.inputs.type))
            .select_from(started)
            .where(started.c.creator_xid == params["creator_xid"]),
        )
        .on_conflict_do_nothing(index_elements=self._key_conflict("workflow_uuid"))
        # a data-modifying CTE runs whether or not it is read; RETURNING for CockroachDB,
        # as DBOS's own end does
        .returning(sa.literal_column("1"))
        .cte("inputs")
    )
    return sa.select(started).add_cte(inputs)


def _check_found(status: WorkflowStatusInternal, found: Any) -> None:
    """DBOS's checks of the row a start returns (``_insert_workflow_status``)."""
    for column, said in _CHECKED.items():
        if found[column] != status[column]:  # type: ignore[literal-required]
            raise DBOSConflictingWorkflowError(
                status["workflow_uuid"],
                f"Workflow already exists with a different {said}: {found[column]}, "
                f"but the provided {said} is: {status[column]}",  # type: ignore[literal-required]
            )
    if found["queue_name"] != status["queue_name"]:
        dbos_logger.warning(
            f"Workflow already exists in queue: {found['queue_name']}, but the provided "
            f"queue name is: {status['queue_name']}. The queue is not updated."
        )
