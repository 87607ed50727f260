"""Opening a session exactly once: ``session.started``, its hooks and its first turn.

A create may come again with its ``Idempotency-Key`` (its answer was lost), ten times at
once, to two workers on one database; each copy finds the session the first one made.
None may publish ``session.started``, run its hooks or queue the first turn a second time,
and if the first request died half-way, one of them must finish what it left. So whether
the session is open is a durable fact in its row (``OpenStage``), and only the holder of
the row's open claim opens it. The create that inserts the row holds the claim from that
transaction on; a replay that finds the session not yet open waits for the holder, and
takes the claim over only once the holder let go (its open failed) or its lease ran out
(its process died: a live holder renews its lease while it works).

On PostgreSQL a create with a first message answers before its open (``pg_create_now.py``):
the row, the claim and the first turn (``OPENING``, which nothing starts) commit in one
call, and the holder opens after the answer. The open's record makes the first turn
startable (``accepted.release_opening``) and hands it to the caller to start. If the holder
dies, a replay of the create takes the claim over as above, or, with no replay coming (its
client has its ``202``), the sweep does (``take_over``): a first turn is never left waiting
for an open nobody finishes.

Opening is safe to redo after a holder died inside it: it publishes ``session.started``
only if the log is still empty (the dead holder's events may have reached it), having
saved its hooks' state first, and queues the first turn by its number, at most once
(``SessionService._enqueue(first=True)``). So nothing reaches the log or the queue twice;
only the hooks of an open that failed before its events were stored run again, as a
durable step that failed before its result was recorded runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.errors import IdempotencyKeyInProgress
from eve.sessions.accepted import Place, release_opening
from eve.sessions.store import SessionStore
from eve.sessions.tables import sessions

#: how long a claim holds unless renewed; its holder renews it every third of this
LEASE_SECONDS = 10.0
#: how long a replay waits for another request's open before it asks its client to retry
WAIT_SECONDS = 30.0
#: a waiting replay looks at the row again after this, doubling up to ``MAX_PAUSE``
FIRST_PAUSE = 0.01
MAX_PAUSE = 0.2


class OpenStage(Enum):
    """Whether a session is open (``eve_sessions.open_stage``)."""

    #: the row exists; session.started may not be in the log, the first turn not queued
    OPENING = "opening"
    #: nothing is left to do
    OPEN = "open"


#: the work of opening one session, safe to redo (``SessionService`` supplies it)
Work = Callable[[], Awaitable[None]]
#: what a caller found of the open claim: its own (``claimed``: it opens the session), or
#: another's that holds (``held``), or nothing left to do (``open``)
Found = Literal["claimed", "held", "open"]


def new_owner() -> str:
    """A claim's owner: one request, here or in another worker."""
    return secrets.token_hex(8)


def claim_new(c: Connection, session_id: str, owner: str) -> None:
    """In the transaction that inserts the session's row: its creator holds the claim."""
    c.execute(
        sessions.update()
        .where(sessions.c.id == session_id)
        .values(
            open_stage=OpenStage.OPENING.value,
            open_owner=owner,
            open_until=time.time() + LEASE_SECONDS,
        )
    )


async def open_session(
    store: SessionStore,
    session_id: str,
    work: Work,
    *,
    owner: str | None = None,
    key: str | None = None,
) -> Place | None:
    """Return once the session is open, opening it with ``work`` if this caller holds
    (``owner``: it made the row) or can take over the claim; a replay passes its ``key``
    for the error it gets if the holder is still at work after ``WAIT_SECONDS``. The first
    turn this call's open made startable (``accepted.release_opening``), for the caller to
    start."""
    mine = owner or new_owner()
    found: Found = "claimed" if owner else "held"
    deadline = time.monotonic() + WAIT_SECONDS
    pause = FIRST_PAUSE
    while True:
        if found == "held":
            found = await asyncio.to_thread(store.run, lambda c: _take_over(c, session_id, mine))
        if found == "open":
            return None
        if found == "claimed" and (opened := await _run(store, session_id, mine, work)):
            return opened.place
        # another request holds the claim, or took it from this one (its lease ran out
        # while this process stalled): wait for it to open the session
        found = "held"
        if time.monotonic() > deadline:
            raise IdempotencyKeyInProgress(
                f"session {session_id} is still being opened by an earlier request; send "
                "the request again, with the same Idempotency-Key, in a moment",
                key=key,
                session_id=session_id,
            )
        await asyncio.sleep(pause)
        pause = min(pause * 2, MAX_PAUSE)


async def take_over(store: SessionStore, session_id: str, work: Work) -> Place | None:
    """Open the session with ``work`` if its claim is free (its holder let go, or died and
    its lease ran out), without waiting for a live holder: the sweep's way, for a first turn
    whose open nobody finishes (a replay's is ``open_session``). The first turn it made
    startable, as ``open_session``."""
    mine = new_owner()
    found = await asyncio.to_thread(store.run, lambda c: _take_over(c, session_id, mine))
    if found != "claimed":
        return None
    opened = await _run(store, session_id, mine, work)
    return opened.place if opened else None


@dataclass(frozen=True, kw_only=True)
class _Opened:
    #: the first turn the open's record made startable
    place: Place | None


async def _run(store: SessionStore, session_id: str, owner: str, work: Work) -> _Opened | None:
    """Open the session while holding the claim; None if the claim was lost meanwhile."""
    renewing = asyncio.create_task(_renew(store, session_id, owner))
    try:
        await work()
        return await _opened(store, session_id, owner)
    except BaseException:
        # let go now, so a retry need not wait for the lease to run out
        with contextlib.suppress(Exception):
            await asyncio.to_thread(store.run, lambda c: _release(c, session_id, owner))
        raise
    finally:
        renewing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewing


def _take_over(c: Connection, session_id: str, owner: str) -> Found:
    now = time.time()
    taken = c.execute(
        sessions.update()
        .where(
            sessions.c.id == session_id,
            sessions.c.open_stage == OpenStage.OPENING.value,
            sa.or_(sessions.c.open_owner.is_(None), sessions.c.open_until < now),
        )
        .values(open_owner=owner, open_until=now + LEASE_SECONDS)
    )
    if taken.rowcount == 1:
        return "claimed"
    row = c.execute(sa.select(sessions.c.open_stage).where(sessions.c.id == session_id)).first()
    # no row (it was pruned), or a row an eve from before open stages opened (NULL)
    if row is None or row[0] != OpenStage.OPENING.value:
        return "open"
    return "held"


async def _opened(store: SessionStore, session_id: str, owner: str) -> _Opened | None:
    """Record the session open, if ``owner`` still holds the claim, and make its first turn
    startable if it waited for that (``accepted.release_opening``)."""
    done = {"open_stage": OpenStage.OPEN.value, "open_owner": None, "open_until": None}

    def record(c: Connection) -> _Opened | None:
        if c.execute(_mine(session_id, owner).values(**done)).rowcount != 1:
            return None
        return _Opened(place=release_opening(c, session_id))

    return await asyncio.to_thread(store.run, record)


async def _renew(store: SessionStore, session_id: str, owner: str) -> None:
    def renew(c: Connection) -> bool:
        kept = c.execute(_mine(session_id, owner).values(open_until=time.time() + LEASE_SECONDS))
        return bool(kept.rowcount == 1)

    while True:
        await asyncio.sleep(LEASE_SECONDS / 3)
        try:
            if not await asyncio.to_thread(store.run, renew):
                return  # taken over: the stage writes will find it lost
        except Exception:  # a database blip: the next renewal may get through
            continue


def _release(c: Connection, session_id: str, owner: str) -> None:
    c.execute(_mine(session_id, owner).values(open_owner=None, open_until=None))


def _mine(session_id: str, owner: str) -> sa.Update:
    return sessions.update().where(sessions.c.id == session_id, sessions.c.open_owner == owner)
