"""A message's claim on the event loop's thread (``eve/sessions/claim_now.py``): made at once
when eve's SQLite file is free, left to a request's thread (which waits) when another
thread or process holds it, and never a partial write."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Connection

from eve.server.serving import serving_context
from eve.server.serving_loop import ServingLoop, new_serving_loop
from eve.sessions.claim_now import NOT_NOW, LoopClaims
from eve.sessions.sqlite_gate import SqliteGate
from eve.sessions.sqlite_requests import request_signal
from eve.sessions.store import SessionStore
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer

SESSION = "ses_claims"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    opened = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    opened.create_session(SESSION)
    yield opened
    opened.close()


@pytest.fixture
def claims(store: SessionStore) -> Iterator[LoopClaims]:
    """The store's claims on the loop, their connection given up after the test."""
    made = LoopClaims(store)
    yield made
    made.close()


@contextlib.contextmanager
def held_by_another_thread(gate: SqliteGate) -> Iterator[None]:
    """``gate`` held by a thread of its own for the block."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with gate.held():
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        held.wait(10)
        yield
    finally:
        release.set()
        holder.join()


@contextlib.contextmanager
def held_by_another_process(path: Path) -> Iterator[sqlite3.Connection]:
    """The file at ``path`` held as another worker's write would hold it, until the block
    ends or the connection yielded rolls back."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield other
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()


def _turn(c: Connection, turn: int) -> int:
    return turn


def _next_turn(store: SessionStore) -> int:
    return store.claim_turn(SESSION, _turn) or 0


def test_a_claim_on_a_free_file_is_made_at_once_and_committed(
    store: SessionStore, claims: LoopClaims
) -> None:
    assert [claims.claim(SESSION, _turn) for _ in range(3)] == [0, 1, 2]
    assert claims.claim("ses_unknown", _turn) is None  # no active session
    assert (claims.on_loop, claims.not_now) == (4, 0)
    assert _next_turn(store) == 3  # committed: another connection sees the numbers taken


def test_a_claim_waits_only_briefly_for_a_file_another_thread_holds(
    store: SessionStore, claims: LoopClaims
) -> None:
    assert store.gate is not None
    with held_by_another_thread(store.gate):
        assert claims.claim(SESSION, _turn) is NOT_NOW
    assert claims.claim(SESSION, _turn) == 0  # the attempt took no number
    assert (claims.on_loop, claims.not_now) == (1, 1)


def test_a_claim_never_waits_for_a_file_another_process_holds(
    claims: LoopClaims, tmp_path: Path
) -> None:
    with held_by_another_process(tmp_path / "eve.sqlite"):
        assert claims.claim(SESSION, _turn) is NOT_NOW
    assert claims.claim(SESSION, _turn) == 0  # its connection is fine once the file is free


def test_what_the_claim_raises_is_raised_and_nothing_is_committed(claims: LoopClaims) -> None:

    def refuse(c: Connection, turn: int) -> int:
        raise LookupError("refused")

    with pytest.raises(LookupError):
        claims.claim(SESSION, refuse)
    assert claims.claim(SESSION, _turn) == 0


def test_its_connection_never_checkpoints_and_serves_one_thread(claims: LoopClaims) -> None:
    assert claims.claim(SESSION, _turn) == 0
    raw = claims._own.opened.connection.dbapi_connection  # type: ignore[union-attr]
    assert raw.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
    assert raw.execute("PRAGMA busy_timeout").fetchone() == (0,)
    found: list[object] = []
    elsewhere = threading.Thread(target=lambda: found.append(claims.claim(SESSION, _turn)))
    elsewhere.start()
    elsewhere.join()
    assert found == [NOT_NOW]
    claims.close()
    assert claims._own.opened is None


def test_a_message_is_claimed_on_the_loop_or_in_a_thread_and_says_where(
    make_app: AppFactory,
) -> None:
    root = scripted_app(make_app, [say("one"), say("two"), say("three")])
    # on a loop that runs requests first, where a claim waits a little for the file
    server = InProcessServer(root, loop_factory=new_serving_loop).start()
    try:
        service = server._client().app.state.service  # type: ignore[attr-defined]
        session = server.create()
        first = server.send(session, "1")
        server.wait_for(session, count("session.waiting", 1))
        # a thread holds the file: the loop leaves the claim to a request's thread, which
        # waits its turn and answers
        gate = service.store.gate
        service.loop_claims.retry = 0.0  # it does not try again on the loop (tested below)
        answers: list[object] = []
        with held_by_another_thread(gate):
            sender = threading.Thread(target=lambda: answers.append(server.send(session, "2")))
            sender.start()
            # the loop's claim waits a little at the gate too, counted as a request
            # waiting: hold the file until the loop gave up and a thread waits instead
            while not (service.loop_claims.not_now and gate.requests_waiting) and sender.is_alive():
                sender.join(0.01)
            while not gate._urgent_waiting and sender.is_alive():
                sender.join(0.01)
            # the thread's claim waits at the gate, and every worker on the file knows
            assert gate.signal is not None and gate.signal.waiting
        sender.join()
        events = server.wait_for(session, count("session.waiting", 2))
    finally:
        server.stop()
    assert first.status_code == 202
    assert "claim;dur=" in first.headers["server-timing"]
    assert 'desc="loop"' in first.headers["server-timing"]
    (second,) = answers
    assert second.status_code == 202  # type: ignore[attr-defined]
    assert 'desc="thread"' in second.headers["server-timing"]  # type: ignore[attr-defined]
    assert service.loop_claims.not_now == 1
    received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
    assert received == ["1", "2"]


def _soon_with_turns_work(
    claims: LoopClaims, *, within: float, each_slice: Callable[[int], object]
) -> object:
    """``claims.claim_soon`` as a request on a loop that runs requests first, while the
    turns' work runs in slices (``each_slice`` called with each slice's number)."""
    loop = ServingLoop(0.0, watch=None)  # a slice: one callback
    found: list[object] = []

    async def request() -> None:
        found.append(await claims.claim_soon(SESSION, _turn, patience=0.0, within=within))

    async def main() -> None:
        for n in range(200):
            loop.call_soon(each_slice, n)
        task = serving_context().run(loop.create_task, request())
        await task

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    return found[0]


def test_a_claim_another_process_holds_the_file_for_tries_again_once_a_slice(
    claims: LoopClaims, tmp_path: Path
) -> None:
    with held_by_another_process(tmp_path / "eve.sqlite") as other:

        def release_at_the_third(n: int) -> None:
            if n == 2:
                other.execute("ROLLBACK")

        found = _soon_with_turns_work(claims, within=60.0, each_slice=release_at_the_third)
    assert found == 0  # claimed on the loop once the file was free
    assert claims.on_loop == 1 and claims.retried >= 2


def test_a_claim_that_tried_again_for_its_time_goes_to_a_thread(
    store: SessionStore, claims: LoopClaims, tmp_path: Path
) -> None:
    with held_by_another_process(tmp_path / "eve.sqlite"):
        found = _soon_with_turns_work(claims, within=0.0, each_slice=lambda n: None)
    assert found is NOT_NOW and claims.on_loop == 0
    assert _next_turn(store) == 0  # nothing was claimed


def test_a_claim_that_cannot_be_made_here_does_not_try_again(claims: LoopClaims) -> None:
    claims._thread = -1  # another thread's (as a store on PostgreSQL has no file to wait for)
    found = _soon_with_turns_work(claims, within=60.0, each_slice=lambda n: None)
    assert found is NOT_NOW and claims.retried == 0


def test_a_claim_that_tries_again_says_so_to_every_process_on_the_file(
    claims: LoopClaims, tmp_path: Path
) -> None:
    """While it tries again, the other workers' background writes let the file go first
    (``sqlite_requests.py``); once it is claimed, no longer."""
    other = request_signal(str(tmp_path / "eve.sqlite"))  # as another worker has it
    assert other is not None
    seen: list[bool] = []
    try:
        with held_by_another_process(tmp_path / "eve.sqlite") as holder:

            def look_and_release_at_the_third(n: int) -> None:
                seen.append(other.waiting)
                if n == 2:
                    holder.execute("ROLLBACK")

            found = _soon_with_turns_work(
                claims, within=60.0, each_slice=look_and_release_at_the_third
            )
        assert found == 0 and claims.retried >= 2
        assert True in seen and not seen[-1] and not other.waiting
    finally:
        other.close()
