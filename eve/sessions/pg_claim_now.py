"""A message's claim on PostgreSQL run on the event loop's thread: one round trip, sent and
awaited without letting the interpreter's lock go.

In a request's thread the claim is five or six round trips, and after each the thread waits
for the interpreter's lock behind a loaded worker's hundred threads: at 500 live sessions a
POST waited p95 1.1 s, nearly all of it its claim. Here the claim is one call of a function
of eve's schema (``pg_claim_sql.py``) on a connection of the loop's own, sent through libpq
with the lock held (``pg_libpq.py``); the loop's thread then waits for the answer, still
holding the lock, up to ``HOLD_SECONDS`` (a commit's flush to disk; nothing else of the
worker runs meanwhile, so the wait is short). Most answers are in by then and the request is
answered in its first step, as on SQLite (``claim_now.py``). One that is not is awaited on
the loop (the connection's socket is one of the loop's readers, which a loop that runs
requests first looks at between its slices). A claim that finds no connection idle waits
on the loop for the first to come back or be opened (one waiting for the session's row,
which a turn's transaction holds, can take a while): at 1,000 live sessions, when such a
claim was left to a thread, a fifth of the claims were, and a POST's p95 was 0.9 s. A
connection handed to a waiting claim counts as out until that claim's task runs, and that
claim takes the others waiting into its statement (``pg_claim_batches.py``). On a loop that
runs requests first the answer is read between two slices of the turns' work
(``ServingLoop.poll_between_slices``), not at a turn of uvloop's loop.

A session's create with its first message is one call too (``pg_create_now.py``), on the
same connections (``PgLoopClaims.call``).

Whatever cannot be claimed this way says ``NOT_NOW`` and is claimed in a request's thread
as before, nothing of the attempt committed (``FallBack`` says why): no connection idle or
out (the first being opened: ``LOOP_CONNECTIONS``, opened in a thread one at a time as
claims find none idle), a connection the server closed, an error the function raised (a
key repeated while its first request is claimed). A connection that fails once its call is
out is another matter: whether the call committed is not known,
so the request is answered ``DatabaseUnavailable`` (503), as the claim in a thread is when
its commit fails, and a client that sent an ``Idempotency-Key`` learns on retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, assert_never

import psycopg
from sqlalchemy.engine import Engine

from eve.auth.principal import PrincipalRef
from eve.errors import DatabaseUnavailable
from eve.sessions.accepted import Place, new_place
from eve.sessions.claim_now import NOT_NOW, NotNow
from eve.sessions.idempotency import TTL_SECONDS, IdempotencyKey, Replayed, kept_answer, purge_due
from eve.sessions.pg_claim_batches import MOST, Rode, Rows, Waiting, answers, riders_for, statement
from eve.sessions.pg_claim_sql import CALL, CALL_PARAMS, install
from eve.sessions.pg_create_sql import DEFINITION as CREATE_DEFINITION
from eve.sessions.pg_create_sql import NAME as CREATE_NAME
from eve.sessions.pg_libpq import Libpq, QueryLost, QueryRefused, found_libpq, pointer
from eve.sessions.pg_pools import LOOP_CONNECTIONS
from eve.sessions.store import SessionStore

#: how long the loop's thread waits for a claim's answer with the lock held, in seconds
HOLD_SECONDS = 0.001
#: how long after a connection could not be opened the next is tried
RETRY_SECONDS = 1.0


@dataclass(frozen=True, kw_only=True)
class MessageClaim:
    """What a message's claim writes, as the function takes it."""

    session_id: str
    #: the turn's input as stored (``accepted.accept``)
    input: Any
    #: its workflow's id with the turn's number left off (``turn_workflow.turn_workflow_id``)
    workflow_before: str
    #: the answer to record for the key, around the turn's number
    answer_before: str
    answer_after: str
    key: IdempotencyKey | None
    now: float
    #: the owner the session must have (``access.owner_to_be``); None: any
    owner: PrincipalRef | None = None

    def params(self) -> list[bytes | None]:
        key, owner = self.key, self.owner
        values = {
            "session_id": self.session_id,
            "input": json.dumps(self.input),
            "workflow_before": self.workflow_before,
            "answer_before": self.answer_before,
            "answer_after": self.answer_after,
            "now": repr(self.now),
            **key_params(key),
            "owner_kind": None if owner is None else owner.kind,
            "owner_id": None if owner is None else owner.id,
        }
        return encoded(values, CALL_PARAMS)


@dataclass(frozen=True, kw_only=True)
class Claimed:
    """The place ``turn`` is accepted (and the key recorded); ``starts``: it may start now."""

    turn: int
    starts: bool


@dataclass(frozen=True, kw_only=True)
class Ended:
    """The session is not active: nothing was written."""


@dataclass(frozen=True, kw_only=True)
class KeyAnswered:
    """The key was answered before: its request's fingerprint and answer (JSON)."""

    fingerprint: str
    answer: str

    def replayed(self, key: IdempotencyKey | None) -> Replayed:
        """What the caller raises: the kept answer, if ``key`` is its request's
        (``IdempotencyKeyReused`` raised if it is another's)."""
        assert key is not None, "only a keyed call finds its key answered"
        return Replayed(kept_answer(key, fingerprint=self.fingerprint, answer=self.answer))


ClaimOutcome = Claimed | Ended | KeyAnswered
#: why a call was left to a thread: no connection idle or out (the first being opened, or
#: the last open failed); the connection it waited for dropped; the function raised; libpq would not
#: send; a key's purge due
FallBack = Literal["opening", "dropped", "refused", "not_sent", "purge"]


class _NotSent(Exception):
    """libpq would not send the call (the connection is broken): it did not run."""


class PgLoopClaims:
    """Claims on the loop's thread for one PostgreSQL database; ``claim`` on that loop only."""

    def __init__(
        self,
        engine: Engine,
        libpq: Libpq,
        *,
        hold: float = HOLD_SECONDS,
        connections: int = LOOP_CONNECTIONS,
        batch: int = MOST,
    ) -> None:
        #: the engine whose URL and driver the connections use (they are not its pool's)
        self.engine = engine
        self.libpq = libpq
        self.hold = hold
        self.most = connections
        #: claims answered within the hold, awaited on the loop, and left to a thread
        self.held = 0
        self.awaited = 0
        self.not_now = 0
        #: those left to a thread, by why (``FallBack``)
        self.fell_back: Counter[FallBack] = Counter()
        #: claims that waited for a connection on the loop, and those of them answered in
        #: another's statement
        self.waited = 0
        self.rode = 0
        #: calls in one statement at most (``pg_claim_batches.MOST``)
        self.batch = batch
        self._idle: list[psycopg.Connection[Any]] = []
        #: claims waiting for a connection, longest first
        self._waiters: deque[Waiting] = deque()
        #: those with a call out
        self._out: set[psycopg.Connection[Any]] = set()
        self._open = 0
        self._opening: asyncio.Task[None] | None = None
        self._retry_at = 0.0
        self._closed = False

    async def claim(self, message: MessageClaim) -> ClaimOutcome | NotNow:
        """Claim ``message``'s turn in one round trip, or ``NOT_NOW`` (nothing committed);
        ``DatabaseUnavailable`` if the connection failed with the call out."""
        rows = await self.call(CALL, message.params())
        return rows if isinstance(rows, NotNow) else _outcome(rows)

    async def call(self, command: bytes, params: list[bytes | None]) -> Rows | NotNow:
        """Run one function of eve's (``command``, committed as it returns) on a connection
        of the loop's: its rows, or ``NOT_NOW`` (nothing committed); ``DatabaseUnavailable``
        if the connection failed with the call out. A call that waited for a connection may
        ride in another's statement, or take others into its own (``pg_claim_batches.py``)."""
        mine = Waiting(command=command, params=params)
        connection = await self._connection(mine)
        if isinstance(connection, str):
            return self.left(connection)
        if isinstance(connection, Rode):
            self.rode += 1
            return connection.answer
        calls = [mine, *mine.riders]
        if mine.riders:
            command, params = statement(calls)
        self._out.add(connection)
        try:
            rows = await self._call(connection, command, params)
        except QueryRefused:
            self._give_back(connection)  # the connection is idle again: the error was the call's
            return self._settle(calls, "refused")
        except _NotSent:
            self._drop(connection)
            return self._settle(calls, "not_sent")
        except QueryLost as lost:
            self._drop(connection)
            _fail(mine.riders)
            raise _unknown() from lost
        except BaseException:
            self._drop(connection)  # cancelled with the call out: its answer is not read
            _fail(mine.riders)
            raise
        finally:
            self._out.discard(connection)
        self._give_back(connection)
        if not mine.riders:
            return rows
        own, *theirs = answers(rows, len(calls))
        for rider, found in zip(mine.riders, theirs, strict=True):
            _settled(rider, Rode(answer=found))
        return own

    def _settle(self, calls: list[Waiting], reason: FallBack) -> NotNow:
        """``NOT_NOW`` for each of ``calls`` (the first's returned, the riders' handed):
        nothing of their statement committed."""
        for rider in calls[1:]:
            self.left(reason)
            _settled(rider, Rode(answer=NOT_NOW))
        return self.left(reason)

    def left(self, reason: FallBack) -> NotNow:
        """``NOT_NOW``, counted: a call left to a thread for ``reason``."""
        self.not_now += 1
        self.fell_back[reason] += 1
        return NOT_NOW

    async def _connection(self, mine: Waiting) -> psycopg.Connection[Any] | FallBack | Rode:
        """An idle connection; with none idle, the first to come back or be opened (on the
        loop: a claim in a thread waits longer, behind the worker's threads), with the calls
        that ride with ``mine`` in its ``riders``, or what ``mine`` got riding in another's
        statement; why not, when none is out (the first being opened), or when the one it
        waited for was dropped."""
        connection = self._take()
        if connection is not None:
            return connection
        if not self._out:
            return "opening"  # none to come back: the first is being opened (it may fail)
        handed: asyncio.Future[psycopg.Connection[Any] | Rode | None]
        handed = mine.handed = asyncio.get_running_loop().create_future()
        self._waiters.append(mine)
        self.waited += 1
        try:
            got = await handed
        except asyncio.CancelledError:
            if handed.done() and not handed.cancelled():
                got = handed.result()
                if isinstance(got, psycopg.Connection):  # handed over as it was cancelled
                    self._waiters.extendleft(reversed(mine.riders))  # theirs, first in line
                    mine.riders = []
                    self._out.discard(got)
                    self._give_back(got)
            raise
        return "dropped" if got is None else got

    def _take(self) -> psycopg.Connection[Any] | None:
        while self._idle:
            connection = self._idle.pop()
            if self.libpq.usable(pointer(connection)):
                return connection
            self._drop(connection)  # the server closed it: a restart, a killed backend
        self._open_one()
        return None

    async def _call(
        self, connection: psycopg.Connection[Any], command: bytes, params: list[bytes | None]
    ) -> Rows:
        libpq, conn = self.libpq, pointer(connection)
        if not libpq.send(conn, command, params):
            raise _NotSent  # nothing left: the call did not run
        if libpq.wait(conn, self.hold):
            self.held += 1
        else:
            await _answered_on_loop(libpq, conn, connection.pgconn.socket)
            self.awaited += 1
        return libpq.rows(conn)

    def _open_one(self) -> None:
        if self._closed or self._open >= self.most or time.monotonic() < self._retry_at:
            return
        if self._opening is None or self._opening.done():
            self._opening = asyncio.get_running_loop().create_task(self._add_connection())

    async def _add_connection(self) -> None:
        self._open += 1
        try:
            connection = await asyncio.to_thread(_connect, self.engine)
        except (psycopg.Error, OSError):
            # the server down, or the function not installable: the claims are the
            # thread's, and a claim after ``RETRY_SECONDS`` tries again
            self._open -= 1
            self._retry_at = time.monotonic() + RETRY_SECONDS
            return
        self._give_back(connection)

    def _give_back(self, connection: psycopg.Connection[Any]) -> None:
        if self._closed:
            self._drop(connection)
        elif not self._hand_over(connection):
            self._idle.append(connection)

    def _hand_over(self, connection: psycopg.Connection[Any] | None) -> bool:
        """Give ``connection`` to the claim that waited longest, with the calls that ride
        with it (None: it claims in a thread); False if none waits. Out from now: until that
        claim's task runs (a loaded loop's next turn, or later) another claim finding none
        idle waits too; counted neither idle nor out, every connection handed over at once
        left the next claim to a thread."""
        while self._waiters:
            waiting = self._waiters.popleft()
            if waiting.handed is None or waiting.handed.done():
                continue
            if connection is not None:
                waiting.riders = riders_for(waiting, self._waiters, most=self.batch)
                self._out.add(connection)
            waiting.handed.set_result(connection)
            return True
        return False

    def _drop(self, connection: psycopg.Connection[Any]) -> None:
        self._open -= 1
        with contextlib.suppress(Exception):
            connection.close()
        self._hand_over(None)  # a claim waiting for it would wait for ever

    def close(self) -> None:
        """Close its connections (one still out is closed as its claim ends)."""
        self._closed = True
        if self._opening is not None:
            self._opening.cancel()
        while self._idle:
            self._drop(self._idle.pop())
        while self._hand_over(None):
            pass


def loop_claims_for(store: SessionStore) -> PgLoopClaims | None:
    """``store``'s claims on the loop: on PostgreSQL, where libpq can be called directly."""
    libpq = found_libpq()
    if store.request_engine is None or libpq is None:
        return None
    return PgLoopClaims(store.request_engine, libpq)


def _connect(engine: Engine) -> psycopg.Connection[Any]:
    """A connection to ``engine``'s database in autocommit mode (each call commits as it
    returns), with the functions it calls installed (a message's claim, a session's create)."""
    cargs, cparams = engine.dialect.create_connect_args(engine.url)
    connection = psycopg.connect(*cargs, **cparams, autocommit=True)
    try:
        install(connection)
        install(connection, CREATE_NAME, CREATE_DEFINITION)
    except BaseException:
        connection.close()
        raise
    return connection


async def _answered_on_loop(libpq: Libpq, conn: int, fd: int) -> None:
    """Wait on the loop (the socket a reader of it) until ``conn``'s whole answer is in."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if done.done():
            return
        try:
            if libpq.answered(conn):
                done.set_result(None)
        except QueryLost as lost:
            done.set_exception(lost)

    loop.add_reader(fd, readable)
    # a loop that runs requests first reads it between two slices, without a turn
    poll: Callable[[Callable[[], object]], Callable[[], None]] | None
    poll = getattr(loop, "poll_between_slices", None)
    stop_polling = poll(readable) if poll is not None else None
    try:
        readable()  # it may have come in since the hold ended
        await done
    finally:
        loop.remove_reader(fd)
        if stop_polling is not None:
            stop_polling()


def _unknown() -> DatabaseUnavailable:
    return DatabaseUnavailable(
        "the session database failed while a message was claimed; it may have been "
        "accepted: retry with the same Idempotency-Key to be answered once"
    )


def _settled(rider: Waiting, got: Rode) -> None:
    if rider.handed is not None and not rider.handed.done():  # not cancelled meanwhile
        rider.handed.set_result(got)


def _fail(riders: list[Waiting]) -> None:
    """Whether their statement committed is not known: each rider's request is a 503."""
    for rider in riders:
        if rider.handed is not None and not rider.handed.done():
            rider.handed.set_exception(_unknown())


def _outcome(rows: Rows) -> ClaimOutcome:
    [[outcome, turn, starts, fingerprint, answer]] = rows
    if outcome == "claimed":
        assert turn is not None
        return Claimed(turn=int(turn), starts=starts == "t")
    if outcome == "ended":
        return Ended()
    assert outcome == "answered" and fingerprint is not None and answer is not None
    return KeyAnswered(fingerprint=fingerprint, answer=answer)


#: where a message's answer, as the caller makes it, holds the turn's number
TURN_MARK = "\x00turn\x00"


def message_claim(
    *,
    session_id: str,
    turn_input: Any,
    key: IdempotencyKey | None,
    answer: str,
    workflow_id: Callable[[int], str],
    owner: PrincipalRef | None = None,
) -> MessageClaim:
    """The claim of a message to ``session_id``: ``answer`` (JSON) is as it will be, with
    ``TURN_MARK`` where the turn's number goes; ``workflow_id``: a turn's workflow id;
    ``owner``: the owner the session must have (None: any)."""
    answer_before, _, answer_after = answer.partition(json.dumps(TURN_MARK)[1:-1])
    workflow_before = workflow_id(0).removesuffix("0")
    assert workflow_id(10) == f"{workflow_before}10", "a turn's workflow id ends with its number"
    return MessageClaim(
        session_id=session_id,
        input=turn_input,
        workflow_before=workflow_before,
        answer_before=answer_before,
        answer_after=answer_after,
        key=key,
        now=time.time(),
        owner=owner,
    )


def key_params(key: IdempotencyKey | None) -> dict[str, str | None]:
    """An ``Idempotency-Key``'s parameters of the loop's calls (claim and create alike):
    where it applies, the key, what was asked, and how long its answer is kept."""
    return {
        "scope": None if key is None else key.scope,
        "key": None if key is None else key.key,
        "fingerprint": None if key is None else key.fingerprint,
        "ttl": repr(TTL_SECONDS),
    }


def encoded(values: Mapping[str, str | None], order: tuple[str, ...]) -> list[bytes | None]:
    """A call's parameters as libpq takes them, in ``order`` (its function's
    ``CALL_PARAMS``, the positions of its ``$n``): text, None for NULL."""
    if set(values) != set(order):
        raise ValueError(f"parameters {sorted(values)} are not the call's {sorted(order)}")
    return [None if (value := values[name]) is None else value.encode() for name in order]


async def claim_message(
    claims: PgLoopClaims, message: MessageClaim
) -> tuple[int, Place | None] | NotNow | None:
    """``message``'s turn and its place if it may start now; None if the session is not
    active; ``Replayed`` raised when its key was answered (``IdempotencyKeyReused`` for
    another request's key); ``NOT_NOW``: claim it in a thread. A claim that would purge the
    expired keys is left to the thread, which does (``idempotency.record``)."""
    if message.key is not None and purge_due(message.now):
        return claims.left("purge")
    found = await claims.claim(message)
    if isinstance(found, NotNow):
        return NOT_NOW
    match found:
        case Claimed(turn=turn, starts=starts):
            place = new_place(
                session_id=message.session_id,
                turn=turn,
                kind="turn",
                workflow_id=f"{message.workflow_before}{turn}",
                turn_input=message.input,
                accepted_at=message.now,
            )
            return turn, place if starts else None
        case Ended():
            return None
        case KeyAnswered():
            raise found.replayed(message.key)
        case _:
            assert_never(found)
