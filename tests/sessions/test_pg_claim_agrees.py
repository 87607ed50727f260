"""A message's claim on PostgreSQL is written twice: as one call of ``eve_claim_message_v2``
on the loop (``pg_claim_sql.py``), and as the transaction of ``store.claim_turn`` in a
request's thread (``SessionService._enqueue``), which SQLite claims every message with and
PostgreSQL the ones the call leaves to it (a key whose purge is due, a connection not open
yet, a call that failed). Both stay: this checks they agree, the same messages to two
sessions, one claimed each way, leaving the same rows and answers."""

from __future__ import annotations

import time
from typing import Any

import pytest
import sqlalchemy as sa

from eve.server.serving_loop import new_serving_loop
from eve.sessions import accepted_sweep, idempotency
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
        found.append((sent.status_code, body, 'desc="loop"' in sent.headers["server-timing"]))
    return found


def _rows(store: SessionStore, session_id: str) -> dict[str, list[dict[str, Any]]]:
    """What the session's claims wrote, its id as ``S`` and without clocks."""
    of_session = {
        "sessions": sa.select(sessions).where(sessions.c.id == session_id),
        "accepted": sa.select(accepted_places).where(accepted_places.c.session_id == session_id),
        "keys": sa.select(idempotency_keys).where(idempotency_keys.c.scope.contains(session_id)),
    }

    return session_rows(store, session_id, of_session)


def test_the_call_and_the_transaction_claim_the_same_rows(
    make_app: AppFactory, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the places stay as their claims left them: none is started, by the request or the sweep
    monkeypatch.setattr(accepted_sweep, "GRACE_SECONDS", 3600.0)
    # no key's claim purges the expired ones (that claim is always the thread's)
    monkeypatch.setattr(idempotency, "_last_purge", time.time() + 3600.0)
    root = scripted_app(make_app, [say("one")])
    env = {"EVE_DATABASE_URL": postgres_url, "EVE_WORKER_ID": "pg-agree"}
    server = InProcessServer(root, env=env, loop_factory=new_serving_loop).start()
    try:
        service = server._client().app.state.service  # type: ignore[attr-defined]
        monkeypatch.setattr(service.turn_limit, "offer", lambda *_: None)
        by_call, by_thread, opener = server.create(), server.create(), server.create()
        # the first claim finds no connection of the loop's and opens one (in a thread)
        server.send(opener, "open")
        claims = service.pg_claims
        deadline = time.monotonic() + 30
        for pause in pauses(0.05):
            if claims._idle or time.monotonic() > deadline:
                break
            time.sleep(pause)
        on_loop = _claims(server, by_call)
        monkeypatch.setattr(service, "pg_claims", None)
        in_thread = _claims(server, by_thread)
        rows_by_call = _rows(service.store, by_call)
        rows_by_thread = _rows(service.store, by_thread)
    finally:
        server.stop()
    # each of one session's by the call (a replay is not marked in Server-Timing), none of
    # the other's
    assert claims.held + claims.awaited == len(SENT) and claims.fell_back == {"opening": 1}
    assert [loop for *_, loop in on_loop] == [True, True, False, True]
    assert [loop for *_, loop in in_thread] == [False] * len(SENT)
    assert [answer for *answer, _ in on_loop] == [answer for *answer, _ in in_thread]
    assert [body["turnId"] for _, body, _ in on_loop] == ["turn_0", "turn_1", "turn_1", "turn_2"]
    assert rows_by_call == rows_by_thread
    assert [row["state"] for row in rows_by_call["accepted"]] == ["accepted"] * 3
