"""Who may take a worker id (``worker_identity.py``), on a real SQLite store: a free id, an
id this process holds, one whose holder died or whose pid was reused is taken at once; one a
live process holds on this host is refused; one held on another host is waited for until
its heartbeat goes stale, and refused if it keeps beating."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from eve.cli.dev_command import dev_worker
from eve.errors import WorkerIdInUse
from eve.sessions.store import SessionStore
from eve.sessions.tables import workers
from eve.sessions.worker_identity import (
    Holder,
    decode,
    release_worker_id,
    take_worker_id,
    this_process,
    worker_row,
)

VERSION = "v-test"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    opened = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    yield opened
    opened.engine.dispose()


def held_by(store: SessionStore, holder: Holder | None, *, beat: float | None = None) -> None:
    """Write worker ``w``'s row as ``holder`` left it (None: as an older eve did)."""
    encoded = None if holder is None else holder.encode()
    with store.engine.begin() as c:
        c.execute(workers.delete().where(workers.c.executor_id == "w"))
        c.execute(
            workers.insert().values(
                executor_id="w",
                application_version=VERSION,
                heartbeat_at=time.time() if beat is None else beat,
                holder=encoded,
            )
        )


def holder_of(store: SessionStore) -> Holder | None:
    seen = store.run(lambda c: worker_row(c, "w"))
    assert seen is not None and seen[0] is not None
    return decode(seen[0])


def take(store: SessionStore, timeout: float = 15.0) -> None:
    asyncio.run(take_worker_id(store, "w", VERSION, timeout=timeout))


def other(pid: int, *, host: str | None = None, started: int = 0) -> Holder:
    me = this_process()
    return Holder(host=host or me.host, scope=me.scope, pid=pid, started=started, nonce="other")


def test_a_free_id_and_an_older_eves_row_are_taken(store: SessionStore) -> None:
    take(store)
    assert holder_of(store) == this_process()
    take(store)  # again in the same process: eve dev restarting its engine
    held_by(store, None)
    take(store)
    assert holder_of(store) == this_process()
    assert store.heartbeat("w", VERSION, this_process().encode())
    # a clean stop lets the id go while this process lives on (an in-process server, then
    # a subprocess under the same id)
    release_worker_id(store, "w")
    seen = store.run(lambda c: worker_row(c, "w"))
    assert seen is not None and seen[0] is None


def test_a_live_process_on_this_host_keeps_its_id(store: SessionStore) -> None:
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ticks = int(Path(f"/proc/{live.pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        held_by(store, other(live.pid, started=ticks))
        with pytest.raises(WorkerIdInUse) as refused:
            take(store)
        assert (refused.value.executor_id, refused.value.pid) == ("w", live.pid)
        assert refused.value.exit_code == 2
        assert f"worker id w is held by a live process (pid {live.pid}" in str(refused.value)
        assert "EVE_WORKER_ID" in str(refused.value)
        # the live holder's own beat still lands; this process's does not
        assert not store.heartbeat("w", VERSION, this_process().encode())
        assert holder_of(store) == other(live.pid, started=ticks)
        # the same pid with another start time is another process that reused it
        held_by(store, other(live.pid, started=ticks + 1))
        take(store)
        assert holder_of(store) == this_process()
    finally:
        live.kill()
        live.wait()


def test_a_dead_holder_on_this_host_is_taken_over_at_once(store: SessionStore) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    held_by(store, other(dead.pid))  # beat just now: only the dead pid says it is free
    take(store)
    assert holder_of(store) == this_process()
    # this very pid under another nonce: the holder died and its pid came round again
    held_by(store, other(os.getpid()))
    take(store)
    assert holder_of(store) == this_process()


def test_another_hosts_holder_is_taken_once_stale_and_refused_while_it_beats(
    store: SessionStore,
) -> None:
    elsewhere = other(1, host="elsewhere")
    # one host name, another machine or container: that its pid is not running here says
    # nothing; only its heartbeat counts, and it keeps beating
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    namesake = Holder(host=this_process().host, scope="another", pid=gone.pid, started=0, nonce="n")
    held_by(store, namesake)
    with pytest.raises(WorkerIdInUse):
        asyncio.run(taken_while_beating(store, namesake))
    held_by(store, namesake, beat=time.time() - 60)
    take(store, timeout=5)
    assert holder_of(store) == this_process()
    held_by(store, elsewhere, beat=time.time() - 60)
    take(store, timeout=5)
    assert holder_of(store) == this_process()

    # fresh when this process starts, then silent: a crashed container, waited out
    held_by(store, elsewhere)
    take(store, timeout=0.3)
    assert holder_of(store) == this_process()

    # and one that keeps beating
    held_by(store, elsewhere)
    with pytest.raises(WorkerIdInUse) as refused:
        asyncio.run(taken_while_beating(store, elsewhere))
    assert refused.value.host == "elsewhere"
    assert holder_of(store) == elsewhere


# a beat every 0.05 s: the holder looks stale only if this process stalls this long, which a
# loaded machine does not do (at 0.3 s one late beat would have let the id be taken)
BEATING_TIMEOUT = 1.2


async def taken_while_beating(store: SessionStore, holder: Holder) -> None:
    """``take_worker_id`` while ``holder`` beats on."""
    beats = asyncio.create_task(beat_forever(store, holder))
    try:
        await take_worker_id(store, "w", VERSION, timeout=BEATING_TIMEOUT)
    finally:
        beats.cancel()


async def beat_forever(store: SessionStore, holder: Holder) -> None:
    while True:
        assert await asyncio.to_thread(store.heartbeat, "w", VERSION, holder.encode())
        await asyncio.sleep(0.05)


def test_eve_dev_takes_its_id_from_eve_worker_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVE_WORKER_ID", raising=False)
    assert dev_worker() == "eve-dev"
    # two people's eve dev on one PostgreSQL: each its own id, apart from serve's -<index>
    monkeypatch.setenv("EVE_WORKER_ID", "alice")
    assert dev_worker() == "alice-dev"
