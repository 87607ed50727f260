"""Turn pickup on notification: the worker dequeues when it has a reason to, not 20 times
a second.

DBOS 3.4 polls each queue in a thread of its own: every ``polling_interval_sec`` (reloaded
from the queue's row at every poll) it reads the queue's row, then claims what it may start,
and it has no way to be woken between polls. At 0.05 s, eve's old interval, that was three
queries twenty times a second on an idle server, most of its idle CPU. So the queue's
interval is now 10 s (``turn_queue.POLLING_INTERVAL_SECONDS``), a safety net only, and this
worker dequeues at once when kicked: at its start, for turns an older eve left on the queue
(eve now starts a session's turns itself, ``accepted.py``, and puts nothing on this queue
per turn), and after ``DurableEngine.enqueue_turn``.

Another worker's enqueue is that worker's to pick up, so nothing crosses processes here.

A pass costs the same few milliseconds whether it starts one workflow or fifty (DBOS builds
and runs the same queries), so under load kicks are gathered: after a pass the thread rests
``REST_FACTOR`` times as long as the pass took (at least ``MIN_GAP_SECONDS``), which keeps
pickup under a fifth of the process's time however many turns end a second. Whether this
worker runs the newest application version (which lets it take workflows enqueued with
none) changes only when a new version launches, so it is asked once per
``VERSION_CHECK_SECONDS`` rather than at every pass.

The pass is DBOS's own batch claim for a queue with one turn per session
(``start_queued_partitioned_workflows``), then DBOS's own start of each claimed workflow,
as its queue thread does: these are DBOS internals, pinned by ``dbos>=3.4,<4`` and checked
by the turn-queue tests. A pass that fails is left to the next kick or the safety net.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

from dbos import Queue
from dbos._core import execute_dequeued_workflow
from dbos._dbos import _get_dbos_instance
from dbos._utils import GlobalParams, generate_uuid

log = logging.getLogger("eve.sessions")

#: the least time between two passes: kicks that come meanwhile share the next pass
MIN_GAP_SECONDS = 0.01
#: after a pass the thread rests this many times as long as the pass took
REST_FACTOR = 4.0
#: the most a pass rests, however slow it was
MAX_GAP_SECONDS = 0.1
#: how long one answer to "is this the newest application version" holds
VERSION_CHECK_SECONDS = 5.0


class QueuePickup:
    """A thread that claims and starts the turn queue's startable workflows when kicked."""

    def __init__(self, queue: Queue) -> None:
        self.queue = queue
        self._kicked = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: passes made, and workflows they started (for tests and the benchmark)
        self.passes = 0
        self.started = 0
        self._latest: bool | None = None
        self._latest_checked = -VERSION_CHECK_SECONDS

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="eve-queue-pickup", daemon=True)
        self._thread.start()
        self.kick()  # what was queued before this worker started

    def stop(self) -> None:
        self._stop.set()
        self._kicked.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def kick(self) -> None:
        """Something may be startable: dequeue soon (from any thread)."""
        self._kicked.set()

    def _run(self) -> None:
        while True:
            self._kicked.wait()
            if self._stop.is_set():
                return
            self._kicked.clear()
            began = time.monotonic()
            try:
                self._pass()
            except Exception as error:  # another worker holds the rows, a blip: the next
                log.debug("turn pickup pass failed: %s", type(error).__name__)
            took = time.monotonic() - began
            self._stop.wait(min(MAX_GAP_SECONDS, max(MIN_GAP_SECONDS, REST_FACTOR * took)))

    def _is_latest(self) -> bool:
        if time.monotonic() - self._latest_checked >= VERSION_CHECK_SECONDS or self._latest is None:
            dbos = _get_dbos_instance()
            self._latest = dbos._sys_db._is_latest_version(GlobalParams.app_version)
            self._latest_checked = time.monotonic()
        return self._latest

    def _pass(self) -> None:
        dbos = _get_dbos_instance()
        owner = generate_uuid()
        self.passes += 1
        claimed = dbos._sys_db.start_queued_partitioned_workflows(
            self.queue,
            GlobalParams.executor_id,
            GlobalParams.app_version,
            sys.maxsize,
            owner_xid=owner,
            is_latest_version=self._is_latest(),
        )
        if not claimed:
            return
        statuses = {s["workflow_uuid"]: s for s in dbos._sys_db.get_workflow_statuses(claimed)}
        for workflow_id in claimed:
            status = statuses.get(workflow_id) or dbos._sys_db.get_workflow_status(workflow_id)
            if status is None:
                log.warning("turn pickup: claimed workflow %s has no status", workflow_id)
                continue
            execute_dequeued_workflow(dbos, status, owner)
            self.started += 1
