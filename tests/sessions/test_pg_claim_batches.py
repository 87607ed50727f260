"""Waiting claims on PostgreSQL sent as one statement (``eve/sessions/pg_claim_batches.py``):
the statement's shape, which calls ride together, and, against a real server, what a
statement commits, what an error in it leaves to a request's thread and what a connection
lost with it out says to each of its calls."""

from __future__ import annotations

import asyncio
import os
import socket
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from eve.errors import DatabaseUnavailable
from eve.sessions.claim_now import NOT_NOW
from eve.sessions.pg_claim_batches import Waiting, answers, riders_for, statement
from eve.sessions.pg_claim_now import Claimed, PgLoopClaims
from eve.sessions.store import SessionStore
from eve.sessions.tables import sessions
from tests.sessions.test_pg_claim_now import (
    SESSION,
    claims_of,
    message,
    place_taken,
    session_locked,
)

OTHERS = ("ses_batch_a", "ses_batch_b")


def _waiting(command: bytes, session: str, *, waits: bool = True) -> Waiting:
    made = Waiting(command=command, params=[session.encode(), b"x"])
    if waits:
        made.handed = asyncio.get_running_loop().create_future()
    return made


async def test_a_statement_renumbers_each_calls_parameters_and_runs_them_by_session() -> None:
    calls = [_waiting(b"SELECT f($1, $2::float8)", s, waits=False) for s in ("s2", "s1")]
    command, params = statement(calls)
    assert command == (
        b"SELECT 1, c.* FROM (SELECT f($1, $2::float8)) AS c UNION ALL "
        b"SELECT 0, c.* FROM (SELECT f($3, $4::float8)) AS c"
    )
    assert params == [b"s1", b"x", b"s2", b"x"]
    # the answer's rows lead with their call's position in ``calls``
    assert answers([["1", "b", None], ["0", "a", "t"]], 2) == [[["a", "t"]], [["b", None]]]


async def test_calls_ride_with_a_leader_of_the_same_function_each_of_another_session() -> None:
    leader = _waiting(b"claim", "s1")
    queue = deque(
        [
            same := _waiting(b"claim", "s1"),  # the leader's session: the next statement's
            other := _waiting(b"claim", "s2"),
            create := _waiting(b"create", "s3"),  # another function
            gone := _waiting(b"claim", "s4"),
            third := _waiting(b"claim", "s5"),
            fourth := _waiting(b"claim", "s6"),
        ]
    )
    assert gone.handed is not None
    gone.handed.cancel()  # its request was cancelled while it waited
    assert riders_for(leader, queue, most=3) == [other, third]
    assert list(queue) == [same, create, fourth]  # in their order, the cancelled one gone


@pytest.fixture
def store(postgres_url: str) -> Iterator[SessionStore]:
    opened = SessionStore(postgres_url)
    for session in (SESSION, *OTHERS):
        opened.create_session(session)
    yield opened
    opened.close()


@pytest.fixture
async def claims(store: SessionStore) -> AsyncIterator[PgLoopClaims]:
    made = claims_of(store)
    made.most = 1  # every claim after the first waits for the one connection
    assert await made.claim(message(to=SESSION)) is NOT_NOW  # it opens the connection
    assert made._opening is not None
    await made._opening
    made.hold = 0.0
    yield made
    made.close()


async def _claims(claims: PgLoopClaims, *to: str) -> list[asyncio.Task[Any]]:
    """Claims of messages ``to`` these sessions, in order, each waiting for the connection."""
    started = []
    for session in to:
        started.append(asyncio.create_task(claims.claim(message(to=session))))
        await asyncio.sleep(0.02)
    return started


def _next_turns(store: SessionStore) -> dict[str, int]:
    with store.engine.connect() as c:
        found = c.execute(sa.select(sessions.c.id, sessions.c.next_turn))
        return {session: int(turn) for session, turn in found}


async def test_claims_waiting_for_the_connection_are_claimed_in_one_statement(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    a, b = OTHERS
    with session_locked(store, SESSION) as release:
        [first] = await _claims(claims, SESSION)  # out, waiting for the row
        waiting = await _claims(claims, a, b, a, SESSION)
        assert claims.waited == 4 and not any(task.done() for task in waiting)
        calls = claims.held + claims.awaited
        release()
        assert await first == Claimed(turn=0, starts=True)
        assert [await task for task in waiting] == [
            Claimed(turn=0, starts=True),
            Claimed(turn=0, starts=True),
            Claimed(turn=1, starts=False),  # a's second: the statement after
            Claimed(turn=1, starts=False),
        ]
    # the first, then a, b and the session's second in one statement, then a's second
    assert claims.held + claims.awaited - calls == 3
    assert claims.rode == 2
    assert _next_turns(store) == {SESSION: 2, a: 2, b: 1}


async def test_an_error_in_one_call_leaves_every_call_of_its_statement_to_a_thread(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    a, b = OTHERS
    place_taken(store, b)  # b's claim fails
    with session_locked(store, SESSION) as release:
        [first] = await _claims(claims, SESSION)
        waiting = await _claims(claims, a, b)
        release()
        assert await first == Claimed(turn=0, starts=True)
        assert [await task for task in waiting] == [NOT_NOW, NOT_NOW]
    assert claims.fell_back == {"opening": 1, "refused": 2}
    assert _next_turns(store) == {SESSION: 1, a: 0, b: 0}  # a's committed nothing either
    assert claims._open == 1  # the connection is idle again: the error was the call's


async def test_the_connection_lost_with_a_statement_out_is_a_503_for_each_of_its_calls(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    a, b = OTHERS
    with session_locked(store, SESSION) as release, session_locked(store, a):
        [first] = await _claims(claims, SESSION)
        waiting = await _claims(claims, a, b)
        release()
        assert await first == Claimed(turn=0, starts=True)
        await asyncio.sleep(0.1)  # a's and b's statement is out, waiting for a's row
        [connection] = claims._out
        with socket.socket(fileno=os.dup(connection.pgconn.socket)) as cut:
            cut.shutdown(socket.SHUT_RDWR)
        for task in waiting:
            with pytest.raises(DatabaseUnavailable, match="may have been accepted"):
                await task
    assert claims._open == 0
