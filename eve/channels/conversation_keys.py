"""Which session a channel's conversation (a Slack thread) is, kept as long as the session.

A conversation's session is opened under an Idempotency-Key named after it, so two first
messages racing each other open one session. But such a key is kept 24 hours
(``idempotency.TTL_SECONDS``), and a thread that speaks again a week later must reach the
same session: so the mapping is kept here too (``eve_conversation_keys``), written once the
session is open, read before any key is tried. Nothing expires it: a row goes only with its
session, and a row whose session is gone (deleted by hand) is ignored, so the conversation
opens a new one.

A conversation's replies are delivered by one worker at a time: ``take_lease`` gives the
row to one courier until it drops it or the lease runs out, so two workers never both read
a thread back before either posts (and both post the same reply).

A crash between the session's opening and this row leaves the Idempotency-Key alone for a
day: the conversation's next message, or the channel's catch-up at start
(``recent``, which carries every key still kept over), writes the row then.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.auth import Principal
from eve.channels.sessions import ChannelSessions
from eve.errors import SessionNotFound
from eve.sessions import idempotency
from eve.sessions.tables import conversation_keys, sessions

#: a restart catches up on the conversations that spoke within this (``recent``)
RECENT_SECONDS = 24 * 3600.0
#: how stale a conversation's ``touched_at`` may get before a message renews it
TOUCH_EVERY_SECONDS = 600.0

_rows = conversation_keys.c


def _scope(principal: Principal) -> str:
    return idempotency.scope_of(idempotency.CREATE_ROUTE, principal)


def _kept() -> sa.ColumnElement[bool]:
    """The row's session still exists."""
    return sa.exists().where(sessions.c.id == _rows.session_id)


async def open_conversation(
    channel: ChannelSessions, key: str, *, told: Callable[[], Awaitable[str | None]] | None = None
) -> str:
    """The session the conversation ``key`` is: the one it was given, however long ago; else
    the one ``told`` says it is (the conversation itself names it: a Slack thread a
    scheduled run started), when the channel may use it; else a new one (opened under
    ``key`` as its Idempotency-Key). Remembered for next time."""
    store = channel.service.store
    now = time.time()
    found = await asyncio.to_thread(store.run, lambda c: touch(c, channel.principal, key, now))
    if found is not None:
        return found
    session_id = await _told(channel, told)
    if session_id is None:
        session_id = (await channel.create(None, key=key)).session_id
    try:
        return await asyncio.to_thread(
            store.run, lambda c: remember(c, channel.principal, key, session_id, now)
        )
    except sa.exc.IntegrityError:
        # another first message of the conversation recorded it between our look and our
        # insert: the same session, opened under the same key
        found = await asyncio.to_thread(store.run, lambda c: touch(c, channel.principal, key, now))
        return found or session_id


async def _told(
    channel: ChannelSessions, told: Callable[[], Awaitable[str | None]] | None
) -> str | None:
    named = None if told is None else await told()
    if named is None:
        return None
    try:
        await channel.get(named)  # one this channel may use, and still kept
    except SessionNotFound:
        return None
    return named


def touch(c: Connection, principal: Principal, key: str, now: float) -> str | None:
    """The session of ``key``, if remembered and kept; marks the conversation as speaking
    (at most every ``TOUCH_EVERY_SECONDS``: a busy thread's messages write nothing here)."""
    mine = (_rows.scope == _scope(principal)) & (_rows.key == key)
    row = c.execute(sa.select(_rows.session_id, _rows.touched_at).where(mine & _kept())).first()
    if row is None:
        return None
    if row.touched_at < now - TOUCH_EVERY_SECONDS:
        c.execute(conversation_keys.update().where(mine).values(touched_at=now))
    return str(row.session_id)


def remember(c: Connection, principal: Principal, key: str, session_id: str, now: float) -> str:
    """Record that ``key`` is ``session_id``; the session it is, when another request
    recorded it first (the same one: both opened it under the same Idempotency-Key)."""
    mine = (_rows.scope == _scope(principal)) & (_rows.key == key)
    held = c.execute(sa.select(_rows.session_id).where(mine & _kept())).scalar()
    if held is not None:
        return str(held)
    c.execute(conversation_keys.delete().where(mine))  # a row whose session is gone
    c.execute(
        conversation_keys.insert().values(
            scope=_scope(principal), key=key, session_id=session_id, touched_at=now
        )
    )
    return session_id


def key_of(c: Connection, principal: Principal, prefix: str, session_id: str) -> str | None:
    """The conversation under ``prefix`` that ``session_id`` is, if any."""
    _carry_over(c, principal, prefix)
    return c.execute(
        sa.select(_rows.key).where(
            _rows.scope == _scope(principal),
            _rows.key.startswith(prefix, autoescape=True),
            _rows.session_id == session_id,
        )
    ).scalar()


def recent(c: Connection, principal: Principal, prefix: str, *, since: float) -> dict[str, str]:
    """The conversations under ``prefix`` that spoke since ``since``: each key's session."""
    _carry_over(c, principal, prefix)
    rows = c.execute(
        sa.select(_rows.key, _rows.session_id).where(
            _rows.scope == _scope(principal),
            _rows.key.startswith(prefix, autoescape=True),
            _rows.touched_at >= since,
            _kept(),
        )
    ).all()
    return {str(key): str(session_id) for key, session_id in rows}


def _carry_over(c: Connection, principal: Principal, prefix: str) -> None:
    """Remember the conversations whose sessions were opened under a key still kept but
    never recorded here: opened by an eve from before this table, or cut short by a crash
    before ``remember``."""
    opened = idempotency.opened_under(c, principal, prefix)
    if not opened:
        return
    known = set(
        c.execute(
            sa.select(_rows.key).where(
                _rows.scope == _scope(principal), _rows.key.in_(list(opened))
            )
        ).scalars()
    )
    now = time.time()
    for key, session_id in opened.items():
        if key not in known:
            remember(c, principal, key, session_id, now)


def take_lease(
    c: Connection, principal: Principal, key: str, *, owner: str, now: float, seconds: float
) -> bool | None:
    """Hold ``key``'s delivery for ``seconds``: True when taken (or held already by
    ``owner``), False when another owner holds it, None when there is no such row."""
    mine = (_rows.scope == _scope(principal)) & (_rows.key == key)
    free = _rows.lease_until.is_(None) | (_rows.lease_until < now) | (_rows.lease_owner == owner)
    taken = c.execute(
        conversation_keys.update()
        .where(mine & free)
        .values(lease_owner=owner, lease_until=now + seconds)
    ).rowcount
    if taken:
        return True
    return False if c.execute(sa.select(_rows.key).where(mine)).first() else None


def drop_lease(c: Connection, principal: Principal, key: str, *, owner: str) -> None:
    mine = (_rows.scope == _scope(principal)) & (_rows.key == key)
    c.execute(
        conversation_keys.update()
        .where(mine & (_rows.lease_owner == owner))
        .values(lease_owner=None, lease_until=None)
    )
