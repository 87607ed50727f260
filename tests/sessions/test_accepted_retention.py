"""Retention forgets the accepted places (``eve_accepted``) of turns done long ago, on SQLite
and PostgreSQL: never a place not yet delivered, nor one behind it, nor one still inside its
Idempotency-Key's window (``accepted.forget_delivered``, ``retention.prune_workflows``)."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy as sa
from dbos import DBOS

from eve.sessions.accepted import deliverable, finish, forget_delivered, mark_enqueued
from eve.sessions.idempotency import TTL_SECONDS
from eve.sessions.retention import prune_workflows
from eve.sessions.settings import SessionSettings, resolve_settings
from eve.sessions.store import SessionStore
from eve.sessions.tables import accepted_places
from eve.sessions.turn_workflow import turn_workflow_id
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_accepted_sweep import accept_turns

#: a prune that sees every workflow as an hour old, and one that sees every key expired too
LATER = 3600.0
PAST_KEYS = TTL_SECONDS + LATER
#: a delivery the held queue refuses gives up soon; the sweep runs with every heartbeat
FAST = {"EVE_WORKER_TIMEOUT": "1", "EVE_SQLITE_BUSY_TIMEOUT": "0.3"}


def _places(store: SessionStore) -> dict[tuple[str, int], str]:
    query = sa.select(accepted_places.c.session_id, accepted_places.c.turn, accepted_places.c.state)
    return {(s, t): state for s, t, state in store.run(lambda c: c.execute(query).all())}


def test_only_done_places_with_nothing_unfinished_ahead_are_forgotten(
    either_store: SessionStore,
) -> None:
    store = either_store
    accept_turns(store, ("ses_a", "ses_b"), 3)
    # ses_a: two turns done, the third on the queue; ses_b: its first never delivered
    for workflow in ("ses_a:turn-0", "ses_a:turn-1", "ses_b:turn-1", "ses_b:turn-2"):
        store.run(lambda c, w=workflow: finish(c, w))
    store.run(lambda c: mark_enqueued(c, [p for p in [deliverable(c, "ses_a")] if p]))
    before = _places(store)

    young = store.run(lambda c: forget_delivered(c, before=time.time() - 60, dry_run=False))
    assert young == 0
    later = time.time() + 1
    assert store.run(lambda c: forget_delivered(c, before=later, dry_run=True)) == 2
    assert _places(store) == before, "a dry run deleted"
    assert store.run(lambda c: forget_delivered(c, before=later, dry_run=False)) == 2
    assert _places(store) == {
        ("ses_a", 2): "enqueued",
        # the sweep delivers ses_b's first turn; the done ones behind it tell it they overtook
        ("ses_b", 0): "accepted",
        ("ses_b", 1): "done",
        ("ses_b", 2): "done",
    }


@contextlib.contextmanager
def _queue_held(settings: SessionSettings) -> Iterator[None]:
    """No turn reaches DBOS's queue until this ends: its workflow table takes no writes."""
    if settings.is_postgres:
        with psycopg.connect(settings.system_url) as holder:
            holder.execute("LOCK TABLE dbos.workflow_status IN SHARE MODE")
            yield
            holder.rollback()
        return
    path = settings.system_url.removeprefix("sqlite:///")
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
        holder.execute("ROLLBACK")
    finally:
        holder.close()


def _settled(store: SessionStore, expected: dict[tuple[str, int], str]) -> None:
    """Wait for the places' states: a body marks its place done just after its last event."""
    deadline = time.monotonic() + 30
    while _places(store) != expected:
        assert time.monotonic() < deadline, _places(store)
        time.sleep(0.02)


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_prune_forgets_old_delivered_places_and_keeps_undelivered_and_keyed_ones(
    make_app: AppFactory, database: str, request: pytest.FixtureRequest
) -> None:
    root = scripted_app(make_app, [say("one"), say("two"), say("three")])
    env = (
        {}
        if database == "sqlite"
        else {"EVE_DATABASE_URL": request.getfixturevalue("postgres_url")}
    )
    settings = resolve_settings(root, env=env)
    server = InProcessServer(root, env={**env, **FAST}).start()
    store = SessionStore(settings.eve_url)
    try:
        session = server.create("hello")
        server.wait_for(session, count("session.waiting"))
        _settled(store, {(session, 0): "done"})
        keyed = {**server.headers(), "Idempotency-Key": "second"}
        path, body = f"/session/{session}", {"message": "again"}
        with _queue_held(settings):
            sent = server.post(path, body, headers=keyed)
            assert (sent.status_code, sent.json()["turnId"]) == (202, "turn_1"), sent.text
            # however old, the place not on the queue yet stays; the done one before it goes
            far = time.time() + PAST_KEYS
            assert store.run(lambda c: forget_delivered(c, before=far, dry_run=False)) == 1
            assert _places(store) == {(session, 1): "accepted"}
        events = server.wait_for(session, count("session.waiting", 2))  # delivered after all
        _settled(store, {(session, 1): "done"})
        # DBOS writes a workflow's end after its body's last events and its place: the prune
        # below counts ended workflows, so wait for both turns' ends first
        for turn in (0, 1):
            assert DBOS.retrieve_workflow(turn_workflow_id(session, turn)).get_result()

        # an hour on, the workflows go; the place stays while its key may be repeated
        hour = prune_workflows(settings, older_than=60, dry_run=False, now=time.time() + LATER)
        assert (hour.deleted, hour.accepted) == ({"SUCCESS": 2}, 0)
        again = server.post(path, body, headers=keyed)
        assert (again.status_code, again.json()["turnId"]) == (202, "turn_1"), again.text
        assert _places(store) == {(session, 1): "done"}

        now = time.time() + PAST_KEYS
        dry = prune_workflows(settings, older_than=60, dry_run=True, now=now)
        assert dry.accepted == 1 and dry.as_json()["accepted"] == 1
        assert prune_workflows(settings, older_than=60, dry_run=False, now=now).accepted == 1
        assert _places(store) == {}
        # the session goes on, its next turn numbered from the session, not the places
        assert server.send(session, "more").json()["turnId"] == "turn_2"
        events = server.wait_for(session, count("session.waiting", 3))
    finally:
        store.close()
        server.stop()
    said = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert said == ["one", "two", "three"]
