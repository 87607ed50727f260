"""A message's claim on PostgreSQL in one round trip on the loop's thread
(``eve/sessions/pg_claim_now.py``), against a real server: what it writes, what it leaves to
a request's thread (nothing committed), and what it says when the server goes away with the
call out."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from eve.errors import DatabaseUnavailable, IdempotencyKeyReused
from eve.server.serving_loop import new_serving_loop
from eve.sessions import idempotency
from eve.sessions.claim_now import NOT_NOW
from eve.sessions.idempotency import IdempotencyKey, Replayed
from eve.sessions.pg_claim_batches import Waiting
from eve.sessions.pg_claim_now import (
    TURN_MARK,
    Claimed,
    Ended,
    KeyAnswered,
    PgLoopClaims,
    claim_message,
    loop_claims_for,
    message_claim,
)
from eve.sessions.pg_claim_sql import CALL
from eve.sessions.pg_libpq import found_libpq, pointer
from eve.sessions.store import SessionStore
from eve.sessions.tables import accepted_places, sessions
from eve.sessions.turn_workflow import turn_workflow_id
from eve.wire.requests import FollowUpBody
from tests.conftest import AppFactory
from tests.polling import pauses
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer

SESSION = "ses_pgclaims"
KEY = IdempotencyKey(scope="POST /session/x", key="k-1", fingerprint="f" * 64)


@pytest.fixture
def store(postgres_url: str) -> Iterator[SessionStore]:
    opened = SessionStore(postgres_url)
    opened.create_session(SESSION)
    yield opened
    opened.close()


def claims_of(store: SessionStore) -> PgLoopClaims:
    """``store``'s claims on the loop (none open yet)."""
    made = loop_claims_for(store)
    assert made is not None, "libpq is found on Linux"
    made.hold = 5.0  # a test's claims are answered within the hold unless it says otherwise
    return made


@pytest.fixture
async def claims(store: SessionStore) -> AsyncIterator[PgLoopClaims]:
    made = claims_of(store)
    yield made
    made.close()


def message(key: IdempotencyKey | None = None, text: str = "hi", *, to: str = SESSION) -> Any:
    """The claim of a message ``to`` a session."""
    mark = {"sessionId": to, "turnId": f"turn_{TURN_MARK}", "status": "accepted"}
    return message_claim(
        session_id=to,
        turn_input={"text": text},
        key=key,
        answer=json.dumps(mark),
        workflow_id=lambda turn: turn_workflow_id(to, turn),
    )


async def _ready(claims: PgLoopClaims) -> None:
    """The first claim finds no connection (it opens one in a thread): wait for it."""
    assert await claims.claim(message()) is NOT_NOW
    assert claims._opening is not None
    await claims._opening


def _rows(store: SessionStore) -> list[tuple[Any, ...]]:
    with store.engine.connect() as c:
        query = sa.select(
            accepted_places.c.turn,
            accepted_places.c.state,
            accepted_places.c.workflow_id,
            accepted_places.c.input,
        ).order_by(accepted_places.c.turn)
        return [tuple(row) for row in c.execute(query)]


def _next_turn(store: SessionStore) -> int:
    with store.engine.connect() as c:
        found = c.execute(sa.select(sessions.c.next_turn).where(sessions.c.id == SESSION))
        return int(found.scalar_one())


async def test_claims_places_in_order_each_in_one_call(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    await _ready(claims)
    assert await claims.claim(message(text="a")) == Claimed(turn=0, starts=True)
    assert await claims.claim(message(text="b")) == Claimed(turn=1, starts=False)
    assert _rows(store) == [
        (0, "accepted", f"{SESSION}:turn-0", json.dumps({"text": "a"})),
        (1, "accepted", f"{SESSION}:turn-1", json.dumps({"text": "b"})),
    ]
    assert _next_turn(store) == 2
    assert (claims.held, claims.not_now) == (2, 1)


async def test_an_ended_session_is_not_claimed(store: SessionStore, claims: PgLoopClaims) -> None:
    await _ready(claims)
    store.end_session(SESSION, "closed")
    assert await claims.claim(message()) == Ended()
    assert _next_turn(store) == 0
    assert _rows(store) == []
    assert await claim_message(claims, message()) is None


async def test_a_key_is_recorded_and_its_repeat_replayed(
    store: SessionStore, claims: PgLoopClaims, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _ready(claims)
    # a claim that would purge the expired keys is the thread's (``idempotency.record``)
    monkeypatch.setattr(idempotency, "_last_purge", 0.0)
    assert await claim_message(claims, message(KEY)) is NOT_NOW
    monkeypatch.setattr(idempotency, "_last_purge", time.time())
    found = await claim_message(claims, message(KEY))
    assert isinstance(found, tuple) and found[0] == 0 and found[1] is not None
    repeat = await claims.claim(message(KEY))
    answer = {"sessionId": SESSION, "turnId": "turn_0", "status": "accepted"}
    assert repeat == KeyAnswered(fingerprint=KEY.fingerprint, answer=json.dumps(answer))
    with pytest.raises(Replayed) as replayed:
        await claim_message(claims, message(KEY))
    assert replayed.value.answer == answer
    other = IdempotencyKey(scope=KEY.scope, key=KEY.key, fingerprint="0" * 64)
    with pytest.raises(IdempotencyKeyReused):
        await claim_message(claims, message(other))
    assert _next_turn(store) == 1  # nothing was claimed again


def place_taken(store: SessionStore, session: str = SESSION) -> None:
    """The place a claim of ``session`` would take is there already: its call fails."""
    with store.engine.begin() as c:
        c.execute(
            accepted_places.insert(),
            {
                "session_id": session,
                "turn": 0,
                "kind": "turn",
                "state": "done",
                "workflow_id": "w",
                "reruns": 0,
                "accepted_at": 0.0,
            },
        )


async def test_an_error_in_the_call_commits_nothing_and_leaves_it_to_a_thread(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    await _ready(claims)
    place_taken(store)
    assert await claims.claim(message()) is NOT_NOW
    assert claims.fell_back == {"opening": 1, "refused": 1}
    assert _next_turn(store) == 0
    with store.engine.begin() as c:
        c.execute(accepted_places.delete())
    # the same connection claims the next one
    assert await claims.claim(message()) == Claimed(turn=0, starts=True)
    assert claims._open == 1


async def test_a_connection_the_server_closed_is_replaced(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    await _ready(claims)
    assert isinstance(await claims.claim(message()), Claimed)
    _terminate_loop_backends(store)
    [connection] = claims._idle
    deadline = time.monotonic() + 30
    # the server's goodbye reaches the socket (a loaded machine may take a while)
    while claims.libpq.usable(pointer(connection)) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert await claims.claim(message()) is NOT_NOW  # found closed before anything was sent
    assert claims.fell_back == {"opening": 2}  # dropped as it was taken, another opened
    await _ready(claims)
    assert await claims.claim(message()) == Claimed(turn=1, starts=False)


@contextlib.asynccontextmanager
async def _claim_out(
    store: SessionStore, claims: PgLoopClaims
) -> AsyncIterator[tuple[asyncio.Task[Any], Any]]:
    """A claim sent and waiting for the session's row, which another connection holds, past
    the hold: the claim's task, and the call that lets the row go."""
    await _ready(claims)
    claims.hold = 0.0
    with session_locked(store) as release:
        claim = asyncio.create_task(claims.claim(message()))
        await asyncio.sleep(0.1)
        assert not claim.done()  # waiting for the row, the loop free meanwhile
        yield claim, release


async def _another_claim(claims: PgLoopClaims) -> asyncio.Task[Any]:
    """A second claim while the first is out, given the time to find no connection idle."""
    claim = asyncio.create_task(claims.claim(message()))
    await asyncio.sleep(0.05)
    return claim


async def _both_claimed(first: Any, second: Any, release: Any) -> None:
    """The row let go: the first claim out takes turn 0, the one that waited turn 1."""
    release()
    assert await first == Claimed(turn=0, starts=True)
    assert await second == Claimed(turn=1, starts=False)


async def test_an_answer_past_the_hold_is_awaited_on_the_loop(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    async with _claim_out(store, claims) as (claim, release):
        release()
        assert await claim == Claimed(turn=0, starts=True)
    assert claims.awaited == 1


async def test_a_call_the_server_ended_is_left_to_a_thread(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    async with _claim_out(store, claims) as (claim, _):
        _terminate_loop_backends(store)  # it answers with an error: nothing committed
        assert await claim is NOT_NOW
    assert _next_turn(store) == 0
    assert await claims.claim(message()) is NOT_NOW  # the closed connection is dropped
    assert claims._open <= 1


async def test_the_connection_lost_with_the_call_out_is_a_503(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    async with _claim_out(store, claims) as (claim, _):
        [connection] = claims._out
        # the network gone: no answer, so whether the call committed is not known
        with socket.socket(fileno=os.dup(connection.pgconn.socket)) as cut:
            cut.shutdown(socket.SHUT_RDWR)
        with pytest.raises(DatabaseUnavailable, match="may have been accepted"):
            await claim
    assert claims._open == 0


def test_libpq_is_found() -> None:
    assert found_libpq() is not None


def _terminate_loop_backends(store: SessionStore) -> None:
    """End the claims' connections (autocommit, running the function or idle after it)."""
    with store.engine.connect() as c:
        c.execute(
            sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE query LIKE 'SELECT outcome%' AND pid <> pg_backend_pid()"
            )
        )


@contextlib.contextmanager
def session_locked(store: SessionStore, session: str = SESSION) -> Iterator[Any]:
    """``session``'s row locked by another connection until the returned call (or the end)."""
    cargs, cparams = store.engine.dialect.create_connect_args(store.engine.url)
    locker = psycopg.connect(*cargs, **cparams)
    locker.execute("SELECT 1 FROM eve_sessions WHERE id = %s FOR UPDATE", (session,))
    try:
        yield locker.commit
    finally:
        with contextlib.suppress(psycopg.Error):
            locker.commit()
        locker.close()


async def test_a_connection_that_cannot_be_opened_is_tried_again_a_second_later(
    store: SessionStore,
) -> None:
    libpq = found_libpq()
    assert libpq is not None
    nowhere = sa.create_engine(store.engine.url.set(database="eve_no_such_database"))
    claims = PgLoopClaims(nowhere, libpq)
    assert await claims.claim(message()) is NOT_NOW
    first = claims._opening
    assert first is not None
    await first
    assert claims._open == 0
    assert await claims.claim(message()) is NOT_NOW
    assert claims._opening is first  # not tried again at once
    claims._retry_at = 0.0
    assert await claims.claim(message()) is NOT_NOW
    assert claims._opening is not first
    await claims._opening
    nowhere.dispose()


def test_a_server_on_postgresql_claims_messages_on_the_loop(
    make_app: AppFactory, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the purge is due as in a fresh process (another test of this worker may have purged)
    monkeypatch.setattr(idempotency, "_last_purge", 0.0)
    root = scripted_app(make_app, [say("one"), say("two"), say("three")])
    env = {"EVE_DATABASE_URL": postgres_url, "EVE_WORKER_ID": "pg-loop"}
    server = InProcessServer(root, env=env, loop_factory=new_serving_loop).start()
    try:
        service = server._client().app.state.service  # type: ignore[attr-defined]
        session = server.create()
        # the first claim finds no connection of the loop's (it opens one): in a thread
        first = server.send(session, "1")
        server.wait_for(session, count("session.waiting", 1))
        claims = service.pg_claims
        deadline = time.monotonic() + 30
        for pause in pauses(0.05):  # its connection opened, in a thread
            if claims._idle or time.monotonic() > deadline:
                break
            time.sleep(pause)
        second = server.send(session, "2")
        server.wait_for(session, count("session.waiting", 2))
        path, keyed = f"/session/{session}", {"Idempotency-Key": "k-3"}
        # the process's first key recorded purges the expired ones: in a thread
        third = server.post(path, FollowUpBody(message="3"), headers=keyed)
        repeat = server.post(path, FollowUpBody(message="3"), headers=keyed)
        events = server.wait_for(session, count("session.waiting", 3))
    finally:
        server.stop()
    timings = [r.headers["server-timing"] for r in (first, second, third)]
    assert ['desc="loop"' in timing for timing in timings] == [False, True, False]
    assert [r.json()["turnId"] for r in (first, second, third, repeat)] == [
        "turn_0",
        "turn_1",
        "turn_2",
        "turn_2",  # replayed, from the loop: no fourth turn
    ]
    assert claims.held + claims.awaited == 2  # the second message and the repeat
    assert claims.fell_back == {"opening": 1, "purge": 1}
    received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
    assert received == ["1", "2", "3"]


async def test_a_claim_finding_every_connection_out_waits_for_one_on_the_loop(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    claims.most = 1
    async with _claim_out(store, claims) as (first, release):
        second = await _another_claim(claims)
        assert not second.done() and claims.waited == 1  # not left to a thread
        await _both_claimed(first, second, release)
    assert claims.fell_back == {"opening": 1}  # only the first, which opened the connection


async def test_a_claim_waiting_for_a_connection_that_is_dropped_goes_to_a_thread(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    claims.most = 1
    async with _claim_out(store, claims) as (first, _):
        second = await _another_claim(claims)
        _terminate_loop_backends(store)
        assert await first is NOT_NOW
        assert await second is NOT_NOW  # handed the broken connection, or none
    assert claims.fell_back["refused"] == 1
    assert claims.fell_back["not_sent"] + claims.fell_back["dropped"] == 1
    assert _next_turn(store) == 0


async def test_a_claim_while_every_connection_is_handed_over_waits_too(
    store: SessionStore, claims: PgLoopClaims, monkeypatch: pytest.MonkeyPatch
) -> None:
    claims.most = 1
    probed: list[bool] = []
    hand_over = claims._hand_over

    def handed(connection: Any) -> bool:
        done = hand_over(connection)
        if done and connection is not None:
            # the claim it went to has not run yet: a claim now finds none idle or out
            probe = claims._connection(Waiting(command=CALL, params=[b"ses_other"]))
            try:
                waiting = probe.send(None)
            except StopIteration as left:
                probed.append(left.value != "opening")
            else:
                probed.append(True)  # it waits for the connection to come back
                probe.close()
                waiting.cancel()
        return done

    monkeypatch.setattr(claims, "_hand_over", handed)
    async with _claim_out(store, claims) as (first, release):
        second = await _another_claim(claims)
        await _both_claimed(first, second, release)
    assert probed == [True]
    assert claims.fell_back == {"opening": 1}  # only the first, which opened the connection


async def test_a_claim_finding_none_idle_waits_for_the_one_being_opened(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    claims.most = 2
    async with _claim_out(store, claims) as (first, release):
        second = await _another_claim(claims)
        assert claims.waited == 1 and claims._opening is not None  # not left to a thread
        await claims._opening
        await asyncio.sleep(0.05)
        assert len(claims._out) == 2  # the new connection went to the waiting claim
        release()
        assert {await first, await second} == {
            Claimed(turn=0, starts=True),
            Claimed(turn=1, starts=False),
        }
    assert claims.fell_back == {"opening": 1}  # only the first, which opened a connection
