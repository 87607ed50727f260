"""DBOS for this process: launch, starting accepted places, messages and worker rescue.

Everything eve asks of DBOS outside a workflow body goes through ``DurableEngine``.
A session's places start in turn order by eve's own rule (``accepted.py``), each straight
away with ``DBOS.start_workflow_async`` under its fixed id: no enqueue, no queue claim, no
pickup pass per turn. What runs again (a dead worker's turns, a rescue) goes on DBOS's own
queue, and the turn queue carries only what an older eve enqueued.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, assert_never

import dbos._workflow_commands as dbos_jobs
from dbos import DBOS, DBOSConfig, EnqueueOptions, SetWorkflowID
from dbos._dbos import _get_dbos_instance
from sqlalchemy.engine import Engine

from eve.sessions.accepted import Place, deliverable, mark_enqueued, undelivered
from eve.sessions.accepted_sweep import AcceptedSweep
from eve.sessions.after_answer import after_answer
from eve.sessions.compact_workflow import compact_workflow
from eve.sessions.database_errors import fail_fast, failure_kind
from eve.sessions.dbos_data import (
    REPEATS,
    EveSerializer,
    redact_dbos_log,
    stop_summarising,
    summarise_repeats,
)
from eve.sessions.dbos_loop_writes import stop_writes_on_loop, writes_on_loop
from eve.sessions.dbos_sqlite import prepare_sqlite_writes
from eve.sessions.dbos_start import DBOS_ENGINE_KWARGS, prepare_workflow_starts, without_pings
from eve.sessions.idle_timer import is_idle_timer
from eve.sessions.pg_pools import DBOS_POOL
from eve.sessions.queue_pickup import QueuePickup
from eve.sessions.settings import SessionSettings
from eve.sessions.sqlite import sqlite_engine
from eve.sessions.store import SessionStore
from eve.sessions.tasks import turn_of
from eve.sessions.thread_lanes import lane_requests
from eve.sessions.turn_queue import (
    TURN_QUEUE,
    count_queued,
    declare_turn_queue,
    queue_declared,
    register_turn_queue,
)
from eve.sessions.turn_workflow import (
    TURN_WORKFLOW,
    TurnInput,
    TurnRuntime,
    reset_workflow,
    turn_workflow,
    turn_workflow_id,
)
from eve.sessions.wal_checkpoints import dispose_engine
from eve.sessions.worker_identity import release_worker_id, take_worker_id, this_process
from eve.wire.mailbox import MAILBOX_TOPIC, MailboxMessage, mail_data

log = logging.getLogger("eve.sessions")

#: a pending workflow of this worker younger than this may just be starting its body
ORPHAN_GRACE_SECONDS = 2.0


class _QuietVersionNotice(logging.Filter):
    """DBOS warns at launch when another agent version ran last; for eve that is normal."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "is not the latest version" not in record.getMessage()


logging.getLogger("dbos").addFilter(_QuietVersionNotice())
#: the statuses of a workflow that is queued or runs
ACTIVE_STATUSES = ("ENQUEUED", "PENDING")
#: seconds between DBOS's polls for a parked workflow's messages on SQLite. A stop waits
#: out the poll in progress (DBOS joins the thread that sleeps it), so the tests shorten it
#: (tests/forkserver.py)
SQLITE_POLL_SECONDS = 1.0
#: how often DBOS's background jobs run: they start delayed workflows and cancel timed-out
#: ones, and eve makes neither; DBOS's 1 s was a fifth of an idle server's CPU (its two
#: queries a second) for nothing. Set before launch: its thread reads it as it starts
#: (a DBOS internal, pinned by ``dbos<4``). SQLite only: on PostgreSQL the process running
#: the jobs holds their advisory lock in a transaction for the whole interval, and DBOS has
#: PostgreSQL end a session idle in a transaction after 5 s, so a longer interval would
#: have a connection killed (and a FATAL logged) at every round
BACKGROUND_JOBS_SECONDS = 30.0
#: DBOS's own interval, kept on PostgreSQL
_DBOS_BACKGROUND_JOBS_SECONDS = 1.0


def dbos_config(settings: SessionSettings) -> DBOSConfig:
    """How eve configures DBOS for ``settings``; on SQLite with an engine eve made."""
    config: DBOSConfig = {
        "name": "eve",
        "system_database_url": settings.system_url,
        "application_version": settings.application_version,
        "executor_id": settings.executor_id,
        "log_level": "WARNING",
        # on SQLite DBOS polls for a parked workflow's messages at this interval; eve wakes
        # the receiver itself when it sends from this process (``send_input``), so the
        # poll only serves another process's sends on the same file
        "notification_listener_polling_interval_sec": SQLITE_POLL_SECONDS,
        # exceptions stored as redacted plain data, never a pickled provider response
        "serializer": EveSerializer(),
    }
    if settings.is_postgres:
        config["sys_db_pool_size"] = DBOS_POOL  # pg_pools.py says why it is small
        config["db_engine_kwargs"] = dict(DBOS_ENGINE_KWARGS)  # dbos_start.without_pings
    else:
        # DBOS's own SQLite engine keeps a rollback journal synced at every commit; in WAL
        # mode a durable step costs less than half as much (bench/README.md)
        config["system_database_engine"] = sqlite_engine(
            settings.system_url,
            synchronous=settings.sqlite_synchronous,
            immediate=True,
            busy_timeout=settings.sqlite_busy_timeout,
        )
    return config


def _priority(turn: int) -> int:
    """A session's turns leave the queue by this (lowest first), then by enqueue time: two
    turns enqueued in the same millisecond would otherwise go by workflow id, where
    ``turn-10`` sorts before ``turn-9``. DBOS takes 1 to 2**31-1."""
    return min(turn + 1, 2**31 - 1)


def _wake_receiver(workflow_id: str, topic: str) -> None:
    """Wake a workflow of this process waiting in ``recv`` on ``topic`` now. DBOS's SQLite
    backend has no notifications: its listener polls at the configured interval. On
    PostgreSQL DBOS's own LISTEN/NOTIFY wakes it. (DBOS internals, pinned by ``dbos<4``.)"""
    sys_db = _get_dbos_instance()._sys_db
    payload, _ = sys_db._waiter(workflow_id, topic)
    if (waiting := sys_db.notifications_map.get(payload)) is not None:
        waiting.set()


async def _end_bodies() -> None:
    """Cancel the workflow bodies running in this process and wait for them, before DBOS
    goes. Left running, each met DBOS's absence at its next step ("System database accessed
    before DBOS was launched", a thousand at every stop under load) until the loop closed.
    A cancelled body records nothing (``execution/loop.py``): its workflow stays pending
    and resumes on the next start, or on a sibling that adopts it. (DBOS's own set of the
    tasks it runs, pinned by ``dbos<4``.)"""
    bodies = [task for task in _get_dbos_instance()._workflow_tasks if not task.done()]
    for task in bodies:
        task.cancel()
    await asyncio.gather(*bodies, return_exceptions=True)


class DurableEngine:
    def __init__(
        self, settings: SessionSettings, store: SessionStore, runtime: TurnRuntime
    ) -> None:
        self.settings = settings
        self.store = store
        self.runtime = runtime
        self._tasks: list[asyncio.Task[None]] = []
        self._system_engine: Engine | None = None
        #: dequeues when this worker has put something on the queue or a body ended
        self.pickup: QueuePickup | None = None
        self.sweep = AcceptedSweep(
            store=store, log=runtime.log, deliver=self.deliver, start=self.start_place
        )
        #: starts of places begun outside a request (``start_soon``), awaited at stop
        self._starting: set[asyncio.Task[None]] = set()
        self._stopping = False
        #: when DBOS last launched here: its scheduler fires the schedules it has on record
        #: from then on, so a schedule's ticks missed while down end there (``scheduler.py``)
        self.launched_at: datetime | None = None

    async def start(self) -> None:
        self._stopping = False
        # beat before launching: a sibling must not mistake a restarted worker, still
        # marked stale from its previous life, for a dead one and adopt its turns; and
        # hold the id first: DBOS's launch recovers every pending workflow of the id, and
        # another live process under it would have both run them (``worker_identity.py``)
        await take_worker_id(
            self.store,
            self.settings.executor_id,
            self.settings.application_version,
            timeout=self.settings.worker_timeout_seconds,
        )
        config = dbos_config(self.settings)
        self._system_engine = config.get("system_database_engine")
        await self._prepare_system_database(config)
        prepare_sqlite_writes()  # DBOS's writes per workflow compiled once (dbos_sqlite.py)
        prepare_workflow_starts()  # and its start cheaper (dbos_start.py)
        dbos_jobs._BACKGROUND_JOBS_INTERVAL_SEC = (
            _DBOS_BACKGROUND_JOBS_SECONDS if self.settings.is_postgres else BACKGROUND_JOBS_SECONDS
        )
        DBOS(config=config)
        redact_dbos_log()
        summarise_repeats()
        DBOS.listen_queues([TURN_QUEUE])
        # launched on this loop's thread, DBOS runs dequeued workflows on this loop rather
        # than on a background loop of its own: cancellation and the event log's wakeups
        # then stay on one loop
        self.launched_at = datetime.now(UTC)
        DBOS.launch()
        without_pings(_get_dbos_instance())
        if self._system_engine is not None and self.settings.dbos_writes_on_loop:
            writes_on_loop(self._system_engine)  # SQLite's: dbos_loop_writes.py
        lane_requests(loop_writes=self.settings.loop_writes)
        await register_turn_queue()
        queue = await DBOS.retrieve_queue_async(TURN_QUEUE)
        assert queue is not None  # registered just now
        self.pickup = QueuePickup(queue)
        self.pickup.start()
        # a body that ends starts its session's next place (``TurnRuntime.settle``)
        self.runtime.start_next = self.start_soon
        try:
            # what was accepted before a crash or an outage and never ran
            await self.sweep.run()
        except Exception as error:
            log.warning("sweep of accepted turns failed at start: %s", type(error).__name__)
        self._tasks.append(asyncio.create_task(self._rescue_loop()))

    async def _prepare_system_database(self, config: DBOSConfig) -> None:
        """DBOS's tables and the turn queue's row before launch, unless one read finds them
        there already: then DBOS launches with its migrations off (it checks its version
        and nothing else), the next starts' cost of a schema made once."""
        system = self._system_engine or self.store.engine  # PostgreSQL: one database
        postgres = self.settings.is_postgres
        if await asyncio.to_thread(queue_declared, system, postgres=postgres):
            config["run_migrations"] = False
            return
        # the queue's row before launch, so DBOS polls it from its first look. Only a head
        # start: launch and register_turn_queue below make the queue whatever happens here,
        # so a database this cannot reach yet (locked, restarting) delays nothing and fails
        # nothing; launch then meets the fault itself and says so
        try:
            await asyncio.to_thread(declare_turn_queue, config)
        except Exception as error:
            log.info("turn queue not declared before launch: %s", type(error).__name__)
            return
        config["run_migrations"] = False  # migrated just now: launch only checks

    def _release(self) -> None:
        # at once or not at all: a stop does not wait out a database that is gone (the
        # store retries a call for a minute); a holder left behind is seen dead at the
        # next start
        with fail_fast():
            release_worker_id(self.store, self.settings.executor_id)

    async def stop(self) -> None:
        # what was accepted reaches DBOS before it stops (else the next start's sweep would
        # start it); what a body ending from here on would start waits for that sweep
        self._stopping = True
        await asyncio.gather(*self._starting, return_exceptions=True)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self.pickup is not None:
            await asyncio.to_thread(self.pickup.stop)
            self.pickup = None
        await _end_bodies()
        if self._system_engine is not None:
            stop_writes_on_loop(self._system_engine)
        await asyncio.to_thread(DBOS.destroy, destroy_registry=False)
        try:
            # nothing of this id runs here now: another process may take it at once
            # a thread of its own: DBOS.destroy shut the loop's default executor (its own)
            with ThreadPoolExecutor(1, thread_name_prefix="eve-release") as one:
                await asyncio.get_running_loop().run_in_executor(one, self._release)
        except Exception as error:
            log.warning("worker id not released at stop: %s", type(error).__name__)
        if self._system_engine is not None:
            dispose_engine(self._system_engine)
            self._system_engine = None
        stop_summarising()  # what was counted and not yet said, the shutdown's own included
        # DBOS made its thread pool the loop's default executor and has now shut it down;
        # give the loop a fresh one so asyncio.to_thread works after a relaunch (eve dev)
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())

    async def deliver(self, session_id: str) -> None:
        """Start the session's first unfinished place if nothing started it yet."""
        place = await asyncio.to_thread(self.store.run, lambda c: deliverable(c, session_id))
        if place is not None:
            await self.start_place(place)

    async def start_place(
        self, place: Place, *, body_marks: bool = False
    ) -> asyncio.Future[Any] | None:
        """Start ``place``'s workflow under its id, then mark it DBOS's (``accepted.py``).

        A crash between leaves it ``accepted``; starting it again hands DBOS an id it has,
        which DBOS answers with the same workflow, run once. ``body_marks``: the start runs
        the body here, which marks its place in its first transaction (``mark_started``),
        so this one is saved; a body that does not run here (DBOS had the workflow
        already) leaves it to the sweep, which starts it again and marks it. Returns the
        body's task when the body runs here (``turn_limit.py`` counts it until it ends)."""
        with SetWorkflowID(place.workflow_id):
            match place.kind:
                case "turn":
                    handle = await DBOS.start_workflow_async(
                        turn_workflow, place.session_id, place.turn, place.input
                    )
                case "reset":
                    handle = await DBOS.start_workflow_async(reset_workflow, place.session_id)
                case "compact":
                    handle = await DBOS.start_workflow_async(compact_workflow, place.session_id)
                case _:
                    assert_never(place.kind)
        if not body_marks:
            await asyncio.to_thread(self.store.run, lambda c: mark_enqueued(c, [place]))
        # a body started here is DBOS's task; an id DBOS had already runs elsewhere, or has
        # ended (a polling handle, no task). DBOS internals, pinned by ``dbos<4``
        body = getattr(handle, "task", None)
        return body if isinstance(body, asyncio.Future) else None

    def start_soon(
        self,
        place: Place,
        context: contextvars.Context | None = None,
        *,
        ended: Callable[[], None] | None = None,
    ) -> None:
        """``try_start`` in a task of its own, in ``context`` (by default a fresh one: from a
        workflow body's end, DBOS would take the start for a child of the body); ``ended``
        once the body is done here, or at once if it did not start here."""
        if self._stopping:
            return
        task = asyncio.get_running_loop().create_task(
            self.try_start(place, ended=ended), context=context or contextvars.Context()
        )
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    async def try_start(self, place: Place, *, ended: Callable[[], None] | None = None) -> None:
        """``start_place``; if DBOS cannot be reached now, the sweep starts it later (the
        accepted row is durable already)."""
        body = None
        try:
            with after_answer():
                body = await self.start_place(place, body_marks=True)
        except Exception as error:
            log.warning(
                "session %s: accepted, queued later by the sweep (%s)",
                place.session_id,
                failure_kind(error),
            )
        if ended is None:
            return
        if body is None:
            ended()
        else:
            body.add_done_callback(lambda _: ended())

    def enqueue_turn(self, session_id: str, turn: int, message: TurnInput) -> None:
        """Put a turn on DBOS's queue (blocking), as an eve before direct starts did; for
        tests of what such an eve left behind."""
        wid = turn_workflow_id(session_id, turn)
        options = self._options(TURN_WORKFLOW, wid, session_id)
        DBOS.enqueue_workflow_with_options(
            {**options, "priority": _priority(turn)}, session_id, turn, message
        )
        if self.pickup is not None:
            self.pickup.kick()  # DBOS's own poll of the turn queue is a slow safety net

    def _options(self, name: str, workflow_id: str, session_id: str) -> EnqueueOptions:
        return {
            "workflow_name": name,
            "queue_name": TURN_QUEUE,
            "workflow_id": workflow_id,
            "queue_partition_key": session_id,
            "app_version": self.settings.application_version,
        }

    def queued_turns(self) -> int:
        """How many turns (and resets, compactions) wait to start, on every worker
        (blocking): the places accepted and not delivered yet, then those on DBOS's queue
        (in that order: a place delivered between the two counts is counted twice, never
        missed). On PostgreSQL DBOS's tables share eve's database."""
        waiting = self.store.run(undelivered)
        engine = self._system_engine or self.store.engine
        return waiting + count_queued(engine, postgres=self.settings.is_postgres)

    async def active_turns(self, session_id: str) -> list[tuple[str, str]]:
        """``(workflow id, status)`` of the session's queued and running turns, oldest first."""
        found = await DBOS.list_workflows_async(
            workflow_id_prefix=f"{session_id}:",
            status=list(ACTIVE_STATUSES),
            load_input=False,
            load_output=False,
        )
        ordered = sorted(found, key=lambda s: (s.created_at or 0, s.workflow_id))
        return [(s.workflow_id, str(s.status)) for s in ordered]

    async def workflow_status(self, workflow_id: str) -> str | None:
        """The workflow's status (``PENDING``, ``SUCCESS``…); None if it has not started."""
        status = await DBOS.get_workflow_status_async(workflow_id)
        return None if status is None else str(status.status)

    async def send_input(self, workflow_id: str, message: MailboxMessage, key: str) -> None:
        """Put ``message`` in the workflow's mailbox, once per ``key``."""
        data = mail_data(message)
        await DBOS.send_async(workflow_id, data, MAILBOX_TOPIC, idempotency_key=key)
        if not self.settings.is_postgres:
            _wake_receiver(workflow_id, MAILBOX_TOPIC)

    async def _rescue_loop(self) -> None:
        """Heartbeat; adopt the turns of a worker that stopped beating (crashed for good);
        sweep the accepted turns nothing runs (``accepted_sweep.py``)."""
        every = max(self.settings.worker_timeout_seconds / 3, 0.2)
        failed = 0
        while True:
            await asyncio.sleep(every)
            try:
                await self._beat_and_rescue()
            except Exception as error:  # a database blip must not stop the heartbeat
                failed += 1
                log.warning("worker heartbeat failed: %s", type(error).__name__)
                continue
            if failed:
                # the fault is over: what was counted under it, then that it ended
                REPEATS.flush()
                log.warning("worker heartbeat works again, after %d failed beat(s)", failed)
                failed = 0
            try:
                # after the beat: a place it cannot settle must not make this worker
                # look dead to its siblings
                await self.sweep.run()
            except Exception as error:
                log.warning("sweep of accepted turns failed: %s", type(error).__name__)

    async def _recover_own(self) -> None:
        """Resume this worker's workflows that DBOS still has pending but nothing here runs:
        a body that failed while the storage refused writes (disk full, I/O error) could
        record neither its end nor its error, and would hold its session's place in the
        queue until a restart. Checked only after a body ended with an error."""
        if not self.runtime.orphans_possible:
            return
        self.runtime.orphans_possible = False
        try:
            pending = await DBOS.list_workflows_async(
                status="PENDING",
                executor_id=self.settings.executor_id,
                load_input=False,
                load_output=False,
            )
            idle = [s for s in pending if s.workflow_id not in self.runtime.inflight]
            # just dequeued, its body not started yet: not an orphan
            cutoff = (time.time() - ORPHAN_GRACE_SECONDS) * 1000
            orphans = [s.workflow_id for s in idle if (s.updated_at or 0) < cutoff]
            if len(orphans) < len(idle):
                self.runtime.orphans_possible = True  # look again at the young ones
            resumed = await self._resume(orphans)
        except Exception:
            self.runtime.orphans_possible = True  # the storage still fails: try again
            raise
        if orphans:
            log.warning("resumed %s that a storage failure had stopped", resumed)

    async def _resume(self, ids: list[str]) -> str:
        """Resume ``ids``; says how many turns and tasks, for the log."""
        turns = [i for i in ids if turn_of(i) == i and not is_idle_timer(i)]
        tasks = [i for i in ids if i not in turns]
        # onto DBOS's own queue, which every worker polls (once a second): whichever
        # dequeues one replays its steps. Not the turn queue: one turn per session there
        # goes by a partition key that a directly started turn has none of, and eve's
        # order keeps the session's next turn back until this one is done anyway
        await DBOS.resume_workflows_async(ids)
        return f"{len(turns)} turn(s)" + (f" and {len(tasks)} task(s)" if tasks else "")

    async def _beat_and_rescue(self) -> None:
        await self._recover_own()
        me, version = self.settings.executor_id, self.settings.application_version
        if not await asyncio.to_thread(self.store.heartbeat, me, version, this_process().encode()):
            # only a holder on another host that took the id while this one did not beat
            # for a whole worker timeout (a paused VM): both now run under it
            log.error("worker id %s is held by another process now; set EVE_WORKER_ID", me)
        cutoff = time.time() - self.settings.worker_timeout_seconds
        for dead in await asyncio.to_thread(self.store.stale_workers, version, cutoff):
            if dead == me or not await asyncio.to_thread(
                self.store.claim_stale_worker, dead, cutoff
            ):
                continue
            pending = await DBOS.list_workflows_async(
                status="PENDING", executor_id=dead, load_input=False, load_output=False
            )
            ids = [s.workflow_id for s in pending]
            if ids:
                adopted = await self._resume(ids)
                log.warning("adopted %s of stopped worker %s", adopted, dead)
