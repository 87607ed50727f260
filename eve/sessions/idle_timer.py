"""The idle timer: a durable workflow per session that ends it once it has been idle for
``session_timeout_seconds``, even if nothing arrives (``session.completed``, reason
``session_timeout``).

Idle means no turn queued or running (a turn parked on a person is not idle) and nothing
logged for the timeout: the deadline is the session's last event plus the timeout. The
workflow sleeps until the deadline with DBOS's durable sleep, so a restart of the server
resumes the wait where it was; on waking it looks again, because activity moves the
deadline. The session ends only if no message was claimed since it looked
(``SessionStore.end_if_unchanged``), so a message that races the timer wins or is refused,
never half-taken.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

import msgspec
from dbos import DBOS, SetWorkflowID

from eve.events import SessionCompletedData
from eve.execution.events import EventEmitter
from eve.sessions.turn_workflow import TurnRuntime, current_runtime

IDLE_WORKFLOW = "eve.idle"
#: the session ended on its idle timeout
TIMEOUT_REASON = "session_timeout"
_ACTIVE = ["ENQUEUED", "PENDING"]


def idle_workflow_id(session_id: str) -> str:
    """Not under ``<session id>:``, where the session's turns and tasks are listed."""
    return f"idle:{session_id}"


def is_idle_timer(workflow_id: str) -> bool:
    return workflow_id.startswith("idle:")


class Look(msgspec.Struct, frozen=True, kw_only=True):
    """What the timer saw: the session is ``over`` (ended), or its ``deadline`` and ``now``
    (epoch seconds), and the turn count a message would change."""

    over: bool = False
    deadline: float = 0.0
    now: float = 0.0
    next_turn: int = 0


class _Meta(msgspec.Struct):
    at: str


class _LastEvent(msgspec.Struct):
    meta: _Meta


async def look(runtime: TurnRuntime, session_id: str, timeout: float) -> Look:
    """When ``session_id`` times out if nothing happens from now on."""
    row = await asyncio.to_thread(runtime.store.get_session, session_id)
    if row is None or row.status != "active":
        return Look(over=True)
    now = time.time()
    busy = await DBOS.list_workflows_async(
        workflow_id_prefix=f"{session_id}:", status=_ACTIVE, load_input=False, load_output=False
    )
    if busy:
        return Look(deadline=now + timeout, now=now, next_turn=row.next_turn)
    payload = await asyncio.to_thread(runtime.store.last_event, session_id)
    last = row.created_at
    if payload is not None:
        at = msgspec.json.decode(payload, type=_LastEvent).meta.at
        last = max(last, datetime.fromisoformat(at).timestamp())
    return Look(deadline=last + timeout, now=now, next_turn=row.next_turn)


async def _look(runtime: TurnRuntime, session_id: str, timeout: float) -> dict[str, object]:
    """``look`` as plain data: DBOS pickles a step's value, and a pickled Struct would stop
    loading the day its class moves."""
    data: dict[str, object] = msgspec.to_builtins(await look(runtime, session_id, timeout))
    return data


async def watch(runtime: TurnRuntime, session_id: str, timeout: float) -> str:
    """The timer's body: look, sleep until the deadline, look again; end it when due."""
    workflow_id = DBOS.workflow_id or idle_workflow_id(session_id)
    while True:
        seen = msgspec.convert(
            await DBOS.run_step_async({"name": "idle.look"}, _look, runtime, session_id, timeout),
            Look,
        )
        if seen.over:
            return "ended"
        if seen.deadline > seen.now:
            await DBOS.sleep_async(seen.deadline - seen.now)
            continue
        ended = await DBOS.run_step_async(
            {"name": "idle.end"},
            asyncio.to_thread,
            runtime.store.end_if_unchanged,
            session_id,
            seen.next_turn,
            TIMEOUT_REASON,
        )
        if ended:
            events = await runtime.events_of(session_id, workflow_id)
            emitter = EventEmitter(events, session_id=session_id, hooks=runtime.setup.hooks)
            await emitter.emit(SessionCompletedData(reason=TIMEOUT_REASON))
            await events.flush()
            runtime.log.forget(session_id)
            return TIMEOUT_REASON
        # a message was claimed meanwhile (or the session ended otherwise): look again


async def start_idle_timer(session_id: str, timeout: float) -> None:
    """Start ``session_id``'s timer unless it has one (its workflow id is the session's, so
    a second start is the first one's)."""
    with SetWorkflowID(idle_workflow_id(session_id)):
        await DBOS.start_workflow_async(idle_workflow, session_id, timeout)


@DBOS.workflow(name=IDLE_WORKFLOW)
async def idle_workflow(session_id: str, timeout: float) -> str:
    runtime = current_runtime()
    async with runtime.tracked():
        return await watch(runtime, session_id, timeout)
