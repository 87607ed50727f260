"""One tick of a schedule, as a DBOS workflow: decide the message, open the run, deliver.

DBOS's scheduler enqueues this workflow once per tick under the id
``sched-eve:<name>-<tick>``; every worker of a deployment fires the same id, and DBOS keeps
one, so a tick runs exactly once however many workers there are. Each part is a durable
step: a worker that dies mid-tick is replaced by one that replays what was done (the
message ``run(ctx)`` chose, the session it opened) and goes on from there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from contextvars import Context
from dataclasses import dataclass
from datetime import datetime
from typing import Any, assert_never

import sqlalchemy as sa
from dbos import DBOS
from dbos._core import StepOptions
from dbos._error import DBOSMaxStepRetriesExceeded

from eve._numbers import bounded_setting
from eve.auth.principal import OPERATOR
from eve.authoring.schedules import ScheduleContext
from eve.channels.sessions import ChannelSessions
from eve.channels.turn_log import Delta, Ended, turn_pieces
from eve.errors import SessionNotActive
from eve.events import Invocation
from eve.manifest import ChannelDelivery, WebhookDelivery
from eve.schedules import named_sessions
from eve.schedules.channel_delivery import deliver_to_channel, session_owner
from eve.schedules.delivery import RunOutcome
from eve.schedules.resolved import ResolvedSchedule
from eve.schedules.webhook_tries import (
    ONE_STEP,
    deliver_webhook,
    delivered_in_one_step,
    post_or_raise,
)
from eve.sessions import SessionService

log = logging.getLogger("eve.schedules")

SCHEDULE_WORKFLOW = "eve-schedule-tick"
#: what eve's DBOS schedules are named: this, then the schedule's name
DBOS_PREFIX = "eve:"
#: how many times a delivery is tried (DBOS retries the step, backing off)
DELIVERY_ATTEMPTS = 4
#: sets the pause before a delivery's second try, in seconds (each next pause doubles)
RETRY_ENV = "EVE_DELIVERY_RETRY_SECONDS"
#: the pause before the second try: DBOS's own default, so 1 s, 2 s, then 4 s
DEFAULT_RETRY_SECONDS = 1.0
#: the longest first pause the setting takes (the last is 4 times as long)
MAX_RETRY_SECONDS = 600.0


def delivery_retry_seconds(env: Mapping[str, str]) -> float:
    """``EVE_DELIVERY_RETRY_SECONDS`` read: unset or empty is ``DEFAULT_RETRY_SECONDS``."""
    raw = env.get(RETRY_ENV, "")
    if raw.strip() == "":
        return DEFAULT_RETRY_SECONDS
    note = f"the default is {DEFAULT_RETRY_SECONDS:g}"
    return bounded_setting(
        RETRY_ENV, raw, unit="seconds", most=MAX_RETRY_SECONDS, note=note, off=False
    )


def delivery_step(retry_seconds: float) -> StepOptions:
    """The options of a delivery's one durable step: ``DELIVERY_ATTEMPTS`` tries, the
    first pause ``retry_seconds`` and each next one twice the last."""
    return {
        "name": ONE_STEP,
        "retries_allowed": True,
        "max_attempts": DELIVERY_ATTEMPTS,
        "interval_seconds": retry_seconds,
        "backoff_rate": 2.0,
    }


def dbos_name(name: str) -> str:
    return DBOS_PREFIX + name


def is_manual_run(workflow_id: str, name: str) -> bool:
    """Whether ``workflow_id`` is a run of schedule ``name`` asked for now rather than a
    tick: DBOS names one (``trigger_schedule``) sched-<schedule>-trigger-<time>."""
    return workflow_id.startswith(f"sched-{dbos_name(name)}-trigger-")


def tick_of(inputs: Any) -> Any:
    """The tick a run of a schedule was for, from its workflow's inputs: the first argument
    of ``schedule_tick`` (None if there is none)."""
    args = inputs.get("args") if isinstance(inputs, dict) else None
    return args[0] if args else None


@dataclass(frozen=True, kw_only=True)
class Opened:
    """The turn a tick started."""

    session_id: str
    turn_id: str


@dataclass(kw_only=True)
class ScheduleRuntime:
    """What this process's tick workflows run with (``install``)."""

    service: SessionService
    schedules: dict[str, ResolvedSchedule]
    #: whether a schedule is paused now (a paused schedule's ticks that still fire skip)
    is_paused: Callable[[str], Coroutine[Any, Any, bool]]
    #: the pause before a delivery's second try (``EVE_DELIVERY_RETRY_SECONDS``)
    retry_seconds: float = DEFAULT_RETRY_SECONDS

    async def run_tick(self, name: str, tick: datetime, *, manual: bool) -> str | None:
        """The session the tick ran in, or None when it sent nothing."""
        schedule = self.schedules.get(name)
        if schedule is None:
            log.warning("schedule %s: a tick fired for a schedule the agent no longer has", name)
            return None
        if not manual and await DBOS.run_step_async(
            {"name": "schedule.paused"}, self.is_paused, name
        ):
            return None
        context = ScheduleContext(name=name, tick=tick, manual=manual)
        message = await DBOS.run_step_async({"name": "schedule.message"}, schedule.message, context)
        if message is None:
            log.info("schedule %s: run(ctx) skipped the tick %s", name, tick.isoformat())
            return None
        invocation = Invocation(kind="schedule", name=name, tick=tick.isoformat(), manual=manual)
        # the tick's workflow id: one per tick (and per manual run), so a replayed step
        # that reaches the service again is answered from its idempotency record
        key = DBOS.workflow_id or f"schedule:{name}:{tick.isoformat()}"
        opened = await DBOS.run_step_async(
            {"name": "schedule.open"}, self.open, schedule, message, invocation, key
        )
        deliver = schedule.entry.deliver
        if deliver is not None:
            outcome = await DBOS.run_step_async(
                {"name": "schedule.outcome"}, self.outcome, name, invocation.tick, opened
            )
            match deliver:
                case WebhookDelivery() if await delivered_in_one_step(DBOS.workflow_id):
                    # a tick an eve before ``schedule.webhook`` recorded delivering, in one
                    # step of this name: replayed, DBOS answers from its record
                    await _in_one_step(self.retry_seconds, outcome, post_or_raise, deliver, outcome)
                case WebhookDelivery():
                    await deliver_webhook(deliver, outcome)
                case ChannelDelivery():
                    assert schedule.channel is not None  # resolved with its channel
                    channel = schedule.channel
                    await _in_one_step(
                        self.retry_seconds,
                        outcome,
                        deliver_to_channel,
                        self.service,
                        channel,
                        deliver,
                        outcome,
                    )
                case _:
                    assert_never(deliver)
        return opened.session_id

    async def open(
        self, schedule: ResolvedSchedule, message: str, invocation: Invocation, key: str
    ) -> Opened:
        """A new session with ``message`` as its first turn, or a turn of the schedule's
        named session. Run outside the step's DBOS context: the service queues the turn's
        own workflow, which DBOS refuses to do from inside a step."""
        detached = self._open(schedule, message, invocation, key)
        return await asyncio.get_running_loop().create_task(detached, context=Context())

    async def _open(
        self, schedule: ResolvedSchedule, message: str, invocation: Invocation, key: str
    ) -> Opened:
        if schedule.entry.session is None:
            # a run delivered to a channel is the channel's, so a reply there continues it
            owner = session_owner(schedule.channel)
            made = await self.service.create(
                message, key=key, principal=owner, invocation=invocation
            )
            return Opened(session_id=made.session_id, turn_id=made.turn_id or "turn_0")
        session_id = await self.named_session(schedule.entry.session, invocation, None)
        try:
            sent = await self.service.send(session_id, message, key=key)
        except SessionNotActive:
            # the named session ended (a limit, a timeout): the name moves to a new one
            session_id = await self.named_session(schedule.entry.session, invocation, session_id)
            sent = await self.service.send(session_id, message, key=key)
        return Opened(session_id=session_id, turn_id=sent.turn_id or "turn_0")

    async def named_session(self, name: str, invocation: Invocation, ended: str | None) -> str:
        store = self.service.store
        if ended is None:
            held = await asyncio.to_thread(store.run, lambda c: named_sessions.session_of(c, name))
            if held is not None:
                return held
        # two ticks racing to open it open one: the same key makes the second a replay
        key = f"schedule-session:{name}:{ended or 'first'}"
        made = await self.service.create(None, key=key, principal=OPERATOR, invocation=invocation)
        try:
            return await asyncio.to_thread(
                store.run,
                lambda c: named_sessions.claim(c, name, made.session_id, replacing=ended),
            )
        except sa.exc.IntegrityError:
            # a racing tick inserted the name first (the same session: the same key)
            held = await asyncio.to_thread(store.run, lambda c: named_sessions.session_of(c, name))
            return held or made.session_id

    async def outcome(self, name: str, tick: str, opened: Opened) -> RunOutcome:
        """Follow the run's turn to its end (past any approval it parks on)."""
        sessions = ChannelSessions(self.service, OPERATOR)
        text: list[str] = []
        start = 0
        while True:
            ended: Ended | None = None
            pieces = turn_pieces(sessions, opened.session_id, opened.turn_id, start, follow=True)
            async for piece in pieces:
                if isinstance(piece, Delta):
                    text.append(piece.text)
                elif isinstance(piece, Ended):
                    ended = piece
            if ended is not None and ended.status != "waiting":
                return RunOutcome(
                    name=name,
                    tick=tick,
                    session_id=opened.session_id,
                    turn_id=opened.turn_id,
                    status=ended.status,
                    text="".join(text),
                    error=ended.error,
                )
            # parked on a person: read on past the request
            if ended is not None:
                start = ended.index + 1
            else:  # the follow ended without the turn's end (a database fault): again
                await asyncio.sleep(1.0)


_runtime: ScheduleRuntime | None = None


def install(runtime: ScheduleRuntime | None) -> None:
    global _runtime
    _runtime = runtime


def _current() -> ScheduleRuntime:
    if _runtime is None:
        raise RuntimeError("eve's schedule runtime is not installed in this process")
    return _runtime


@DBOS.workflow(name=SCHEDULE_WORKFLOW)
async def schedule_tick(scheduled_at: datetime, context: Any) -> str | None:
    """The workflow DBOS's scheduler enqueues; ``context`` is ``{"name": <schedule>}``."""
    name = str(context["name"])
    manual = is_manual_run(DBOS.workflow_id or "", name)
    return await _current().run_tick(name, scheduled_at, manual=manual)


async def _in_one_step(
    retry_seconds: float,
    outcome: RunOutcome,
    post: Callable[..., Coroutine[Any, Any, object]],
    *args: Any,
) -> None:
    """``post(*args)`` as one durable step DBOS tries ``DELIVERY_ATTEMPTS`` times."""
    try:
        await DBOS.run_step_async(delivery_step(retry_seconds), post, *args)
    except DBOSMaxStepRetriesExceeded as exceeded:
        # DBOS's error says only that the step gave up: name why, once, in the log
        last = exceeded.errors[-1] if exceeded.errors else exceeded
        log.warning(
            "schedule %s: the answer of session %s was not delivered after %d tries: %s: %s",
            outcome.name,
            outcome.session_id,
            DELIVERY_ATTEMPTS,
            type(last).__name__,
            last,
        )
        raise
