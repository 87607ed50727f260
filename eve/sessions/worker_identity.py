"""Which process holds a worker id, so that two never run under one.

DBOS recovers the pending workflows of its executor id when it launches, and eve's
heartbeats and adoption go by that id too. Two live processes under one id (two ``eve serve``
on one machine without ``EVE_WORKER_ID``, an ``eve run`` beside an ``eve serve``, two hosts of
one name) would each take the other's unfinished turns for their own and run them twice. So
a worker's row in ``eve_workers`` names its holder: host, pid, the pid's start time and a
nonce drawn at boot. A process may take an id when nobody holds it, when it holds it
already (``eve dev`` restarting its engine), or when the holder is gone: on this host a pid
that is no longer alive (or is reused: another start time, or this very process), on
another host a heartbeat older than the worker timeout. Otherwise it refuses with
``WorkerIdInUse`` before DBOS launches and recovers anything.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve._proc_stat import stat_fields
from eve.errors import WorkerIdInUse
from eve.sessions.tables import workers

if TYPE_CHECKING:
    from eve.sessions.store import SessionStore

#: a worker's holder and last heartbeat, as its row says
Seen = tuple[str | None, float]

#: how the holder is written in its column: fields joined by this (a host name holds none)
_SEP = " "


@dataclass(frozen=True, kw_only=True)
class Holder:
    #: the host name, as the refusal reports it
    host: str
    #: where ``pid`` means one process: this boot of the machine and its pid namespace
    #: (Linux; empty elsewhere). Two hosts of one name, or two containers on one machine,
    #: differ here, so neither asks its own kernel about the other's pid
    scope: str
    pid: int
    #: the pid's start time in clock ticks since boot (Linux), 0 where unknown: a pid
    #: reused by another process after a reboot or a wrap starts at another time
    started: int
    #: drawn once per process: the same host and pid with another nonce is another life
    nonce: str

    def encode(self) -> str:
        return _SEP.join((self.host, self.scope, str(self.pid), str(self.started), self.nonce))

    def beside(self, other: Holder) -> bool:
        """Whether ``other``'s pid can be looked up from this process."""
        return (self.host, self.scope) == (other.host, other.scope)


def decode(text: str) -> Holder | None:
    """The holder written in a row, or None for a row an older eve wrote (no holder) or an
    unreadable one: either is taken as free, as every row was before holders."""
    parts = text.split(_SEP)
    if len(parts) != 5 or not parts[2].isdigit() or not parts[3].isdigit():
        return None
    host, scope, pid, started, nonce = parts
    return Holder(host=host, scope=scope, pid=int(pid), started=int(started), nonce=nonce)


def _scope() -> str:
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return ""
    return f"{boot}:{namespace}"


def _start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot); None if it is gone or a zombie; 0
    where ``/proc`` cannot say (then only whether the pid exists is known)."""
    try:
        fields = stat_fields(pid)
    except FileNotFoundError:
        return None
    except OSError:
        return 0 if _pid_exists(pid) else None
    if fields[0] in (b"Z", b"X"):  # killed, not reaped yet: dead all the same
        return None
    return int(fields[19])


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _draw() -> Holder:
    pid = os.getpid()
    return Holder(
        host=socket.gethostname(),
        scope=_scope(),
        pid=pid,
        started=_start_ticks(pid) or 0,
        nonce=secrets.token_hex(8),
    )


_ME = _draw()


def this_process() -> Holder:
    """The holder this process writes; a fork (a ``--workers`` child) draws its own."""
    global _ME
    if _ME.pid != os.getpid():
        _ME = _draw()
    return _ME


def holder_is_live(holder: Holder, heartbeat_at: float, *, timeout: float) -> bool:
    """Whether ``holder`` (another nonce than this process's) may still run its turns."""
    me = this_process()
    if holder.beside(me):
        if holder.pid == me.pid:
            return False  # that pid is this process now: the holder died before it
        started = _start_ticks(holder.pid)
        if started is None:
            return False
        # the pid lives; it is the holder unless it started at another time (reused)
        return started == 0 or holder.started in (0, started)
    # another host's processes cannot be asked: only its heartbeat tells
    return heartbeat_at >= time.time() - timeout


def refusal(executor_id: str, holder: Holder, heartbeat_at: float) -> WorkerIdInUse:
    ago = max(time.time() - heartbeat_at, 0.0)
    return WorkerIdInUse(
        f"worker id {executor_id} is held by a live process (pid {holder.pid} on host "
        f"{holder.host}, heartbeat {ago:.0f} s ago); two processes under one id would each "
        "run the other's unfinished turns. Give this one an id of its own with EVE_WORKER_ID "
        "(eve serve appends -<index> to it), or stop the other process first",
        executor_id=executor_id,
        host=holder.host,
        pid=holder.pid,
    )


async def take_worker_id(
    store: SessionStore, executor_id: str, version: str, *, timeout: float
) -> None:
    """Hold ``executor_id`` for this process and beat, or raise ``WorkerIdInUse``.

    A holder whose pid cannot be looked up from here (another host, another container) is
    waited for, up to one worker timeout: one that crashed stops beating and is taken over
    then (a container restarted under the same id); one that lives keeps beating and is
    refused."""
    me = this_process()
    deadline = time.time() + timeout
    while True:
        seen = await asyncio.to_thread(store.run, lambda c: worker_row(c, executor_id))
        holder = _live_holder(seen, timeout=timeout)
        if holder is not None and seen is not None:
            if holder.beside(me) or time.time() >= deadline:
                raise refusal(executor_id, holder, seen[1])
            await asyncio.sleep(max(timeout / 6, 0.1))
            continue
        if await asyncio.to_thread(hold_worker, store, executor_id, version, me.encode(), seen):
            return
        # another process wrote the row between our read and our write: look again


def _live_holder(seen: Seen | None, *, timeout: float) -> Holder | None:
    """The process holding the row ``seen``, if it is another one and may still live."""
    if seen is None or seen[0] is None:
        return None
    holder = decode(seen[0])
    if holder is None or holder == this_process():
        return None
    return holder if holder_is_live(holder, seen[1], timeout=timeout) else None


def worker_row(c: Connection, executor_id: str) -> Seen | None:
    """``executor_id``'s holder and last heartbeat, None if it has no row."""
    row = c.execute(
        sa.select(workers.c.holder, workers.c.heartbeat_at).where(
            workers.c.executor_id == executor_id
        )
    ).first()
    return None if row is None else (row[0], row[1])


def hold_worker(
    store: SessionStore, executor_id: str, version: str, holder: str, seen: Seen | None
) -> bool:
    """Make ``holder`` the holder of ``executor_id`` and beat, if its row is still as
    ``worker_row`` saw it (``seen``); False when another process changed it between."""
    values = {"application_version": version, "heartbeat_at": time.time(), "holder": holder}
    if seen is None:
        try:
            store.run(
                lambda c: c.execute(workers.insert().values(executor_id=executor_id, **values))
            )
        except sa.exc.IntegrityError:
            return False  # another process inserted it first
        return True
    done = store.run(
        lambda c: c.execute(
            workers.update()
            .where(
                workers.c.executor_id == executor_id,
                workers.c.holder.is_not_distinct_from(seen[0]),
            )
            .values(**values)
        )
    )
    return bool(done.rowcount == 1)


def release_worker_id(store: SessionStore, executor_id: str) -> None:
    """A clean stop: the id is free for the next process at once (the row stays, so a
    sibling still adopts what was left pending once its heartbeat is stale)."""
    me = this_process().encode()
    store.run(
        lambda c: c.execute(
            workers.update()
            .where(workers.c.executor_id == executor_id, workers.c.holder == me)
            .values(holder=None)
        )
    )
