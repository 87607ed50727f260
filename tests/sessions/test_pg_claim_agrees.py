"""A message's claim on PostgreSQL is written twice: as one call of ``eve_claim_message_v2``
on the loop (``pg_claim_sql.py``), and as the transaction of ``store.claim_turn`` in a
request's thread (``SessionService._enqueue``), which SQLite claims every message with and
PostgreSQL the ones the call leaves to it (a key whose purge is due, a connection not open
yet, a call that failed). A session's create with its first message too:
``eve_create_session_v1`` (``pg_create_sql.py``) and the create in a thread. Both stay: this
checks they agree, the same requests made each way leaving the same rows and answers."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from eve.server.serving_loop import new_serving_loop
from eve.sessions import accepted_sweep, idempotency
from eve.sessions.accepted import OPENING
from eve.sessions.service import SessionService
from eve.sessions.store import SessionStore
from eve.sessions.tables import accepted_places, idempotency_keys, sessions
from eve.wire.requests import FollowUpBody
from tests.conftest import AppFactory
from tests.polling import pauses
from tests.sessions.apps import say, scripted_app
from tests.sessions.inprocess import InProcessServer
from tests.sessions.session_rows import plain, session_rows

#: what each session is sent: a message, a keyed one, its repeat (replayed), another
SENT = [("1", None), ("2", "k-1"), ("2", "k-1"), ("3", None)]


def _claims(server: InProcessServer, session_id: str) -> list[tuple[Any, ...]]:
    """Send ``SENT`` to ``session_id``: each answer (status, body) and whether the loop
    claimed it."""
    found = []
    for text, key in SENT:
        headers = {} if key is None else {"Idempotency-Key": key}
        sent = server.post(f"/session/{session_id}", FollowUpBody(message=text), headers=headers)
        body = {k: plain(v, session_id) for k, v in sent.json().items()}
        found.append((sent.status_code, body, _loop(sent)))
    return found


def _rows(store: SessionStore, session_id: str) -> dict[str, list[dict[str, Any]]]:
    """What the session's claims wrote, its id as ``S`` and without clocks."""
    of_session = {
        "sessions": sa.select(sessions).where(sessions.c.id == session_id),
        "accepted": sa.select(accepted_places).where(accepted_places.c.session_id == session_id),
        "keys": sa.select(idempotency_keys).where(idempotency_keys.c.scope.contains(session_id)),
    }

    return session_rows(store, session_id, of_session)


@contextlib.contextmanager
def _serving(
    make_app: AppFactory, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[InProcessServer, SessionService]]:
    """A server on PostgreSQL whose loop connection is open, and its service; no place it
    accepts is started, by the request or the sweep, so each stays as its claim left it."""
    monkeypatch.setattr(accepted_sweep, "GRACE_SECONDS", 3600.0)
    # no key's claim purges the expired ones (that claim is always the thread's)
    monkeypatch.setattr(idempotency, "_last_purge", time.time() + 3600.0)
    root = scripted_app(make_app, [say("one")])
    env = {"EVE_DATABASE_URL": postgres_url, "EVE_WORKER_ID": "pg-agree"}
    server = InProcessServer(root, env=env, loop_factory=new_serving_loop).start()
    try:
        service = server._client().app.state.service  # type: ignore[attr-defined]
        monkeypatch.setattr(service.turn_limit, "offer", lambda *_: None)
        # the first claim finds no connection of the loop's and opens one (in a thread)
        server.create("open")
        _until(lambda: bool(service.pg_claims._idle))
        yield server, service
    finally:
        server.stop()


def _until(done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    for pause in pauses(0.05):
        if done() or time.monotonic() > deadline:
            break
        time.sleep(pause)
    assert done()


def test_the_call_and_the_thread_create_the_same_rows(
    make_app: AppFactory, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: dict[bool, tuple[Any, ...]] = {}
    with _serving(make_app, postgres_url, monkeypatch) as (server, service):
        for on_loop in (True, False):
            if not on_loop:
                monkeypatch.setattr(service, "pg_claims", None)
            key = f"key-{on_loop}"
            sent = server.post("/session", {"message": "first"}, headers={"Idempotency-Key": key})
            session_id = sent.json()["sessionId"]
            # the open follows the call's answer: until it is recorded, the place is opening
            opened = sa.select(accepted_places.c.state).where(
                accepted_places.c.session_id == session_id
            )
            _until(lambda q=opened: service.store.read(lambda c: c.execute(q).scalar()) != OPENING)
            queries = {
                "sessions": sa.select(sessions).where(sessions.c.id == session_id),
                "accepted": sa.select(accepted_places).where(
                    accepted_places.c.session_id == session_id
                ),
                "keys": sa.select(idempotency_keys).where(idempotency_keys.c.key == key),
            }
            rows = session_rows(service.store, session_id, queries)
            for row in rows["keys"]:
                row["key"] = "K"
            for row in rows["sessions"]:
                del row["open_owner"], row["open_until"]  # the holder's own, and a clock
            answer = {k: plain(v, session_id) for k, v in sent.json().items()}
            made[on_loop] = (sent.status_code, answer, _loop(sent), rows, server.events(session_id))
    (status, answer, loop, rows, events), thread = made[True], made[False]
    assert (loop, thread[2]) == (True, False)
    assert (status, answer) == thread[:2]
    assert rows == thread[3]
    assert [row["state"] for row in rows["accepted"]] == ["accepted"]
    assert [e["type"] for e in events] == [e["type"] for e in thread[4]] == ["session.started"]


def _loop(sent: httpx.Response) -> bool:
    return 'desc="loop"' in sent.headers["server-timing"]


def test_the_call_and_the_transaction_claim_the_same_rows(
    make_app: AppFactory, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _serving(make_app, postgres_url, monkeypatch) as (server, service):
        by_call, by_thread = server.create(), server.create()
        claims = service.pg_claims
        on_loop = _claims(server, by_call)
        monkeypatch.setattr(service, "pg_claims", None)
        in_thread = _claims(server, by_thread)
        rows_by_call = _rows(service.store, by_call)
        rows_by_thread = _rows(service.store, by_thread)
    # each of one session's by the call (a replay is not marked in Server-Timing), none of
    # the other's
    assert claims.held + claims.awaited == len(SENT) and claims.fell_back == {"opening": 1}
    assert [loop for *_, loop in on_loop] == [True, True, False, True]
    assert [loop for *_, loop in in_thread] == [False] * len(SENT)
    assert [answer for *answer, _ in on_loop] == [answer for *answer, _ in in_thread]
    assert [body["turnId"] for _, body, _ in on_loop] == ["turn_0", "turn_1", "turn_1", "turn_2"]
    assert rows_by_call == rows_by_thread
    assert [row["state"] for row in rows_by_call["accepted"]] == ["accepted"] * 3
