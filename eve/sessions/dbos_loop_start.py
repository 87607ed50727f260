"""A workflow's start and end through DBOS with their writes on the event loop's thread
(``dbos_loop_writes.py``) where they may run there, and in a thread as before elsewhere.

A turn's workflow takes two thread hops of DBOS's, each only for its write on SQLite (DBOS
internals, pinned by ``dbos>=3.4,<4``):

- **The start.** ``DBOS.start_workflow_async`` runs ``_init_workflow`` (the status row and
  the inputs, ``SystemDatabase.init_workflow``) with ``asyncio.to_thread``, in the middle of
  ``dbos._core.start_workflow_async``. That function reaches ``to_thread`` through its
  module's name ``asyncio``, so that name is given an object that is asyncio in every other
  respect (``_CoreAsyncio``), and whose ``to_thread`` of ``_init_workflow`` does what
  ``_init_workflow`` does for a plain start (no parent workflow, no queue): it builds the
  status (DBOS's ``_assemble_workflow_status``) and queues DBOS's own
  ``_insert_workflow_status`` on the loop; told ``NOT_NOW``, it runs DBOS's
  ``init_workflow`` in a thread with that status and the same creator token, so a start
  whose commit failed but landed is still recognised as its own. Any other start is
  DBOS's, in its thread.
- **The end.** ``Pending.then`` (``dbos_start._chained``) hands a body's value to DBOS's
  ``persist`` in a thread, which serializes it and writes the status and output
  (``dbos_sqlite._outcome``). For a workflow's body (``_get_wf_invoke_func`` marks its
  ``persist``: ``WorkflowEnd``) that returned, the value is serialized on the loop and the
  write queued there; told ``NOT_NOW`` the same write runs in a thread as DBOS runs it
  (``update_workflow_outcome``, with its retries). A write that did not land (the workflow is
  no longer this execution's), a body that raised, a workflow already ended, or a value
  that does not serialize: DBOS's ``persist`` in a thread, as before.

PostgreSQL's starts and ends and steps' records keep their own paths.
"""

from __future__ import annotations

import asyncio
import types
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dbos._core as dbos_core
from dbos._context import DBOSContext, current_owner_xid
from dbos._serialization import serialize_value_as
from dbos._sys_db import (
    SystemDatabase,
    WorkflowStatuses,
    WorkflowStatusInternal,
    WorkflowStatusString,
)

from eve.sessions.claim_now import NotNow
from eve.sessions.dbos_loop_writes import loop_writes
from eve.sessions.dbos_sqlite import outcome_write

if TYPE_CHECKING:
    from dbos import DBOS

_DBOS_INIT = dbos_core._init_workflow
_DBOS_INVOKE = dbos_core._get_wf_invoke_func
#: ``_init_workflow``'s arguments that also build the status (``_assemble_workflow_status``)
_ASSEMBLED = (
    "inputs",
    "wf_name",
    "class_name",
    "config_name",
    "queue",
    "workflow_timeout_ms",
    "workflow_deadline_epoch_ms",
    "enqueue_options",
    "serialization_type",
    "child_workflow_id",
)
_SUCCESS: WorkflowStatuses = WorkflowStatusString.SUCCESS.value
_ENDED = (WorkflowStatusString.SUCCESS.value, WorkflowStatusString.ERROR.value)


class _CoreAsyncio(types.ModuleType):
    """``asyncio`` as ``dbos._core`` sees it: its start's ``to_thread`` of ``_init_workflow``
    may write on the loop (``_start``)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    async def to_thread(self, func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        if func is _DBOS_INIT:
            return await _start(*args, **kwargs)
        return await asyncio.to_thread(func, *args, **kwargs)


def prepare_loop_writes() -> None:
    """Install both (idempotent); they act only where ``loop_writes`` says so."""
    if not isinstance(getattr(dbos_core, "asyncio"), _CoreAsyncio):  # noqa: B009
        setattr(dbos_core, "asyncio", _CoreAsyncio("asyncio"))  # noqa: B010
    dbos_core._get_wf_invoke_func = _invoke_func


async def _start(
    dbos: DBOS, ctx: DBOSContext, **kwargs: Any
) -> tuple[WorkflowStatusInternal, bool, str | None]:
    """DBOS's ``_init_workflow(dbos, ctx, **kwargs)``, its write on the loop if it may run
    there: a plain start, whose errors DBOS's would raise as they come."""
    sys_db: SystemDatabase = dbos._sys_db
    writes = loop_writes(sys_db.engine)
    if writes is None or ctx.has_parent() or kwargs.get("queue") is not None:
        return await asyncio.to_thread(_DBOS_INIT, dbos, ctx, **kwargs)
    status = dbos_core._assemble_workflow_status(
        dbos, ctx, **{name: kwargs[name] for name in _ASSEMBLED if name in kwargs}
    )
    # once, as DBOS makes it: a retry in a thread recognises a row this one committed
    creator_xid = str(uuid.uuid4())
    policy = kwargs.get("workflow_id_reuse_policy")
    found: tuple[WorkflowStatuses, bool] | NotNow = await writes.run(
        lambda c: sys_db._insert_workflow_status(
            status, c, creator_xid=creator_xid, reuse_policy=policy
        )
    )
    if isinstance(found, NotNow):
        found = await asyncio.to_thread(
            sys_db.init_workflow, status, creator_xid=creator_xid, reuse_policy=policy
        )
    wf_status, should_execute = found
    # what DBOS's ``_init_workflow`` does once its write returned
    if should_execute:
        ctx.owner_xid = creator_xid
    ctx.workflow_deadline_epoch_ms = kwargs.get("workflow_deadline_epoch_ms")
    status["status"] = wf_status
    return status, should_execute, None


def _invoke_func(
    dbos: DBOS, status: WorkflowStatusInternal, release_active: Callable[[], None] = lambda: None
) -> WorkflowEnd:
    return WorkflowEnd(_DBOS_INVOKE(dbos, status, release_active), dbos, status)


@dataclass(frozen=True, slots=True)
class WorkflowEnd:
    """DBOS's ``persist`` of a workflow's outcome, marked as a workflow's (not a step's)."""

    persist: Callable[[Callable[[], Any]], Any]
    dbos: DBOS
    status: WorkflowStatusInternal

    def __call__(self, func: Callable[[], Any]) -> Any:
        return self.persist(func)

    async def returned(self, value: Any) -> Any:
        """``persist`` of a body that returned ``value``, its write on the loop if it may."""
        sys_db: SystemDatabase = self.dbos._sys_db
        writes = loop_writes(sys_db.engine)
        if writes is None or self.status["status"] in _ENDED:
            return await asyncio.to_thread(self.persist, lambda: value)
        workflow_id = self.status["workflow_uuid"]
        try:
            output, _ = serialize_value_as(
                value, self.status["serialization"], self.dbos._serializer
            )
        except Exception:
            # DBOS's ``persist`` meets it again and records the error
            return await asyncio.to_thread(self.persist, lambda: value)
        owner_xid = current_owner_xid(workflow_id)
        write = outcome_write(sys_db, workflow_id, _SUCCESS, owner_xid=owner_xid, output=output)
        landed: bool | NotNow = await writes.run(write)
        if isinstance(landed, NotNow):
            landed = await asyncio.to_thread(
                sys_db.update_workflow_outcome, workflow_id, _SUCCESS, output=output
            )
        if landed:
            return value
        # not this execution's to record: DBOS's ``persist`` finds that again and waits for
        # the outcome recorded by the execution that owns it
        return await asyncio.to_thread(self.persist, lambda: value)
