"""A channel's conversation keys on SQLite and PostgreSQL: kept past the idempotency window,
carried over from an older eve's Idempotency-Keys, and gone with their session."""

from __future__ import annotations

import time

from eve.auth import Principal
from eve.channels import conversation_keys as keys
from eve.sessions import idempotency
from eve.sessions.store import SessionStore, insert_session
from eve.sessions.tables import idempotency_keys, sessions

TEAM = Principal(id="slack:team", kind="channel")
OTHER = Principal(id="slack:other", kind="channel")
PREFIX = "slack:team:"
WEEK = 7 * 24 * 3600.0


def open_session(store: SessionStore, session_id: str) -> None:
    store.run(lambda c: insert_session(c, session_id, owner=TEAM))


def test_a_key_outlives_the_idempotency_window_and_goes_with_its_session(
    either_store: SessionStore,
) -> None:
    store = either_store
    open_session(store, "ses_a")
    long_ago = time.time() - WEEK
    assert store.run(lambda c: keys.remember(c, TEAM, PREFIX + "T:C:1", "ses_a", long_ago))
    # another request recorded first: the first session stays the key's
    assert store.run(lambda c: keys.remember(c, TEAM, PREFIX + "T:C:1", "ses_b", 0)) == "ses_a"
    assert store.run(lambda c: keys.recent(c, TEAM, PREFIX, since=time.time() - 60)) == {}
    assert store.run(lambda c: keys.touch(c, OTHER, PREFIX + "T:C:1", 0)) is None  # not theirs
    now = time.time()
    assert store.run(lambda c: keys.touch(c, TEAM, PREFIX + "T:C:1", now)) == "ses_a"
    assert store.run(lambda c: keys.recent(c, TEAM, PREFIX, since=now - 60)) == {
        PREFIX + "T:C:1": "ses_a"
    }
    assert store.run(lambda c: keys.key_of(c, TEAM, PREFIX, "ses_a")) == PREFIX + "T:C:1"

    store.run(lambda c: c.execute(sessions.delete().where(sessions.c.id == "ses_a")))
    assert store.run(lambda c: keys.touch(c, TEAM, PREFIX + "T:C:1", now)) is None
    assert store.run(lambda c: keys.recent(c, TEAM, PREFIX, since=0)) == {}
    open_session(store, "ses_b")  # the conversation's next message opens a new session
    assert store.run(lambda c: keys.remember(c, TEAM, PREFIX + "T:C:1", "ses_b", now)) == "ses_b"


def test_an_idempotency_key_still_kept_is_carried_over(either_store: SessionStore) -> None:
    store = either_store
    open_session(store, "ses_old")
    key = idempotency.key_for(idempotency.CREATE_ROUTE, PREFIX + "T:C:2", None, principal=TEAM)
    store.run(lambda c: idempotency.record(c, key, {"sessionId": "ses_old", "turnId": None}))
    assert store.run(lambda c: keys.recent(c, TEAM, PREFIX, since=time.time() - 60)) == {
        PREFIX + "T:C:2": "ses_old"
    }
    # the key expires: the conversation is still found
    aged = idempotency_keys.update().values(created_at=idempotency_keys.c.created_at - WEEK)
    store.run(lambda c: c.execute(aged))
    assert store.run(lambda c: keys.touch(c, TEAM, PREFIX + "T:C:2", time.time())) == "ses_old"
