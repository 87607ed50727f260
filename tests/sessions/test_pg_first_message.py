"""On PostgreSQL, a session's first message and a principal's message claimed on the loop
(``pg_create_now.py``, ``pg_claim_now.py``), against a real server: what the answer stands
for, the open after it, replays and races, a holder that died after the answer, and who may
message a session (the SQL's rule and ``access.may_see`` agree on every case)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from eve.auth.principal import OPERATOR, Principal, ref_of
from eve.errors import EveError, IdempotencyKeyReused
from eve.server.serving_loop import new_serving_loop
from eve.sessions import SessionService, idempotency, opening
from eve.sessions.accepted import OPENING
from eve.sessions.access import may_see, owner_to_be
from eve.sessions.claim_now import NOT_NOW
from eve.sessions.idempotency import IdempotencyKey, Replayed
from eve.sessions.opening import OpenStage
from eve.sessions.pg_claim_now import TURN_MARK, Claimed, Ended, PgLoopClaims
from eve.sessions.pg_claim_now import message_claim as claim_of
from eve.sessions.pg_create_now import Created, SessionCreate, create_session
from eve.sessions.store import SessionStore, read_session
from eve.sessions.tables import accepted_places, sessions
from eve.sessions.turn_workflow import turn_workflow_id
from tests.conftest import AppFactory
from tests.polling import pauses
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.principals import ALICE, BOB, on_service
from tests.sessions.test_idempotent_open import (
    assert_opened_once,
    at_once,
    fail_once,
    hooked_app,
    keyed,
)
from tests.sessions.test_pg_claim_now import claims_of

KEY = IdempotencyKey(scope="POST /session", key="c-1", fingerprint="f" * 64)
#: a channel's principal with Alice's id: another kind, so another principal
ALICE_CHANNEL = Principal(id=ALICE.id, kind="channel")
SOMEONE_OPERATING = Principal(id="ops-bot", kind="operator")


@pytest.fixture
def store(postgres_url: str) -> Iterator[SessionStore]:
    opened = SessionStore(postgres_url)
    yield opened
    opened.close()


@pytest.fixture
async def claims(store: SessionStore) -> AsyncIterator[PgLoopClaims]:
    made = claims_of(store)
    assert await made.call(b"SELECT 1", []) is NOT_NOW  # opens its connection in a thread
    assert made._opening is not None
    await made._opening
    yield made
    made.close()


@pytest.fixture(autouse=True)
def no_purge_due(monkeypatch: pytest.MonkeyPatch) -> None:
    """A keyed call whose purge of expired keys is due is the thread's: not due here."""
    monkeypatch.setattr(idempotency, "_last_purge", time.time())


def _create(session_id: str, key: IdempotencyKey | None = KEY) -> Any:
    answer = {"sessionId": session_id, "turnId": "turn_0", "status": "accepted"}
    return SessionCreate(
        session_id=session_id,
        owner=ref_of(ALICE),
        open_owner="holder-1",
        input={"text": "hi"},
        workflow_id=turn_workflow_id(session_id, 0),
        key=key,
        answer=json.dumps(answer),
    )


def _row(store: SessionStore, session_id: str) -> Any:
    with store.engine.connect() as c:
        return c.execute(sa.select(sessions).where(sessions.c.id == session_id)).first()


def _places(store: SessionStore, session_id: str) -> list[tuple[Any, ...]]:
    with store.engine.connect() as c:
        query = sa.select(accepted_places.c.turn, accepted_places.c.state).where(
            accepted_places.c.session_id == session_id
        )
        return [tuple(row) for row in c.execute(query.order_by(accepted_places.c.turn))]


async def test_a_create_writes_the_row_its_open_claim_the_first_place_and_the_key(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    assert await create_session(claims, _create("ses_a")) == Created()
    row = _row(store, "ses_a")
    assert (row.status, row.next_turn, row.owner_kind, row.owner_id) == (
        "active",
        1,
        "user",
        ALICE.id,
    )
    assert (row.open_stage, row.open_owner) == (OpenStage.OPENING.value, "holder-1")
    assert row.open_until > time.time()
    # the first turn is accepted, and nothing starts it before the open is recorded
    assert _places(store, "ses_a") == [(0, OPENING)]
    # the function's literals are the Python names'
    assert OpenStage.OPENING.value == OPENING
    # a replay writes nothing and gets the first answer; another request's key is refused
    with pytest.raises(Replayed) as replayed:
        await create_session(claims, _create("ses_b"))
    assert replayed.value.answer["sessionId"] == "ses_a"
    other = IdempotencyKey(scope=KEY.scope, key=KEY.key, fingerprint="0" * 64)
    with pytest.raises(IdempotencyKeyReused):
        await create_session(claims, _create("ses_c", key=other))
    assert _row(store, "ses_b") is None and _row(store, "ses_c") is None


async def test_a_create_the_server_refuses_commits_nothing(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    store.create_session("ses_taken")
    assert await create_session(claims, _create("ses_taken")) is NOT_NOW
    assert _places(store, "ses_taken") == []
    assert await create_session(claims, _create("ses_free")) == Created()  # its connection kept


async def test_a_keyed_create_whose_purge_is_due_is_the_threads(
    store: SessionStore, claims: PgLoopClaims, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(idempotency, "_last_purge", 0.0)
    assert await create_session(claims, _create("ses_p")) is NOT_NOW
    assert claims.fell_back["purge"] == 1
    assert _row(store, "ses_p") is None


async def test_the_claims_owner_rule_agrees_with_may_see_on_every_case(
    store: SessionStore, claims: PgLoopClaims
) -> None:
    owners = {"ses_alice": ALICE, "ses_chan": ALICE_CHANNEL, "ses_op": OPERATOR}
    for session_id, owner in owners.items():
        store.create_session(session_id, owner=owner)
    # a row from before ownership names no owner: the operator's
    store.create_session("ses_old")
    with store.engine.begin() as c:
        c.execute(
            sessions.update()
            .where(sessions.c.id == "ses_old")
            .values(owner_id=None, owner_kind=None)
        )
    askers = [OPERATOR, SOMEONE_OPERATING, ALICE, BOB, ALICE_CHANNEL]
    for session_id in [*owners, "ses_old"]:
        for asker in askers:
            with store.engine.connect() as c:
                row = read_session(c, session_id)
            assert row is not None
            before = row.next_turn
            mark = {"sessionId": session_id, "turnId": f"turn_{TURN_MARK}"}
            message = claim_of(
                session_id=session_id,
                turn_input={"text": "m"},
                key=None,
                answer=json.dumps(mark),
                workflow_id=lambda turn, s=session_id: turn_workflow_id(s, turn),  # type: ignore[misc]
                owner=owner_to_be(asker),
            )
            found = await claims.claim(message)
            allowed = may_see(row.owner, asker)
            assert isinstance(found, Claimed) == allowed, (session_id, asker)
            if not allowed:
                assert found == Ended()
                with store.engine.connect() as c:
                    after = read_session(c, session_id)
                assert after is not None and after.next_turn == before  # nothing committed


# --- through a server on PostgreSQL ----------------------------------------------------


@pytest.fixture
def server(make_app: AppFactory, postgres_url: str) -> Iterator[InProcessServer]:
    env = {"EVE_DATABASE_URL": postgres_url, "EVE_WORKER_ID": "pg-first", "EVE_WORKER_TIMEOUT": "1"}
    running = InProcessServer(hooked_app(make_app), env=env, loop_factory=new_serving_loop)
    running.start()
    try:
        _warm(running)
        yield running
    finally:
        running.stop()


def _service(server: InProcessServer) -> SessionService:
    return server._client().app.state.service  # type: ignore[attr-defined,no-any-return]


def _warm(server: InProcessServer) -> None:
    """The loop's first call opens its connection (in a thread): wait until it is open.
    That first create is made in a thread meanwhile, as before, and opened before its
    answer."""
    claims = _service(server).pg_claims
    assert claims is not None
    warm = server.post("/session", {"message": "warm"})
    assert warm.status_code == 202 and not _on_loop(warm)
    assert _places(_service(server).store, warm.json()["sessionId"])[0][1] != OPENING
    deadline = time.monotonic() + 30
    for pause in pauses(0.05):
        if claims._idle or time.monotonic() > deadline:
            break
        time.sleep(pause)
    assert claims._idle, "the loop's connection opened"


def _on_loop(response: Any) -> bool:
    return 'desc="loop"' in response.headers.get("server-timing", "")


def test_a_first_message_is_answered_from_the_loop_and_opened_after(
    server: InProcessServer,
) -> None:
    created = server.post("/session", {"message": "hi"})
    assert created.status_code == 202 and _on_loop(created)
    assert created.json()["turnId"] == "turn_0"
    events = assert_opened_once(server, created.json()["sessionId"])
    kinds = [e["type"] for e in events]
    assert kinds.index("session.started") < kinds.index("turn.started")


def test_a_follow_up_sent_while_the_session_opens_waits_for_the_first_turn(
    server: InProcessServer,
) -> None:
    hold = server.app_root / "hold-open"
    hold.write_text("until the follow-up is accepted")
    try:
        session = server.post("/session", {"message": "hi"}).json()["sessionId"]
        follow_up = server.post(f"/session/{session}", {"message": "next"})
        assert (follow_up.status_code, follow_up.json()["turnId"]) == (202, "turn_1")
    finally:
        hold.unlink()
    events = server.wait_for(session, count("session.waiting", 2))
    turns = [e["data"]["turn_id"] for e in events if e["type"] == "turn.started"]
    assert turns == ["turn_0", "turn_1"]


def test_a_replayed_create_on_the_loop_gets_the_first_answer(server: InProcessServer) -> None:
    first = server.post("/session", {"message": "hi"}, headers=keyed("again"))
    replay = server.post("/session", {"message": "hi"}, headers=keyed("again"))
    assert _on_loop(first)
    assert (replay.status_code, replay.json()) == (202, first.json())
    assert replay.headers["idempotent-replayed"] == "true"
    other = server.post("/session", {"message": "other"}, headers=keyed("again"))
    assert (other.status_code, other.json()["code"]) == (422, "idempotency_key_reused")
    assert_opened_once(server, first.json()["sessionId"])


def test_ten_creates_at_once_on_the_loop_open_one_session_once(server: InProcessServer) -> None:
    answers = at_once(server, "/session", {"message": "hi"}, "at-once")
    assert {a.status_code for a in answers} == {202}
    assert len({a.json()["sessionId"] for a in answers}) == 1
    assert sum(a.headers.get("idempotent-replayed") == "true" for a in answers) == 9
    assert_opened_once(server, answers[0].json()["sessionId"])


def test_an_open_whose_holder_died_after_the_answer_is_finished_by_the_sweep(
    server: InProcessServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No replay comes (the client has its 202): the sweep takes the claim over once its
    lease ran out, finishes the open and starts the first turn."""
    monkeypatch.setattr(opening, "LEASE_SECONDS", 0.3)
    monkeypatch.setattr(opening, "_release", lambda *args: None)  # died: never lets go
    fail_once(monkeypatch, "_watch_idle")  # after session.started and its state are stored
    created = server.post("/session", {"message": "hi"})
    assert created.status_code == 202 and _on_loop(created)
    session = created.json()["sessionId"]
    assert_opened_once(server, session)
    assert _places(_service(server).store, session) == [(0, "done")]


def outcome(server: InProcessServer, call: Any) -> Any:
    try:
        return on_service(server, call)
    except EveError as error:
        return (type(error).__name__, error.code, error.http_status, str(error))


def test_a_principals_message_is_claimed_on_the_loop_and_a_refusal_is_the_threads(
    server: InProcessServer,
) -> None:
    service = _service(server)
    claims = service.pg_claims
    assert claims is not None
    made = outcome(server, lambda s: s.create("first", principal=ALICE))
    session = made.session_id
    before = claims.held + claims.awaited
    sent = outcome(server, lambda s: s.send(session, "mine", principal=ALICE))
    assert sent.turn_id == "turn_1" and claims.held + claims.awaited == before + 1

    def refusals() -> list[Any]:
        return [outcome(server, _send_as(session, p)) for p in (BOB, ALICE_CHANNEL)]

    on_loop = refusals()
    assert claims.held + claims.awaited == before + 3  # the refusals were the loop's too
    service.pg_claims = None  # the claim in a thread, as before
    try:
        in_thread = refusals()
    finally:
        service.pg_claims = claims
    assert on_loop == in_thread
    assert on_loop[0][:3] == ("SessionNotActive", "session_not_active", 409)
    with service.store.engine.connect() as c:
        row = read_session(c, session)
    assert row is not None and row.next_turn == 2  # no refusal took a number
    assert _places(service.store, session)[-1][0] == 1


def _send_as(session: str, principal: Principal) -> Any:
    return lambda s: s.send(session, "x", principal=principal)
