"""Who may see and act on a session: its owner and operators; to anyone else it does not
exist. On the real service (the in-process app's); through the routes, with real tokens, in
test_route_rights.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from eve.auth.principal import OPERATOR, Principal
from eve.channels.sessions import ChannelSessions
from eve.errors import EveError, InputRequestNotPending, TaskNotWaiting
from eve.sessions import InputResponse, SessionService
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.inprocess import InProcessServer
from tests.sessions.principals import ALICE, BOB, on_service

Operation = Callable[[SessionService, str, Principal], Awaitable[Any]]

#: every operation on one session, as the service offers it
OPERATIONS: dict[str, Operation] = {
    "get": lambda s, sid, p: s.get(sid, principal=p),
    "summary": lambda s, sid, p: s.summary(sid, principal=p),
    "events": lambda s, sid, p: s.events(sid, 0, follow=False, principal=p),
    "send": lambda s, sid, p: s.send(sid, "hello", principal=p),
    "respond": lambda s, sid, p: s.respond(
        sid, [InputResponse(request_id="inp_none", option_id="approve")], principal=p
    ),
    "send_event": lambda s, sid, p: s.send_event(sid, f"{sid}:nothing", "x", {}, principal=p),
    "cancel": lambda s, sid, p: s.cancel(sid, principal=p),
    "compact": lambda s, sid, p: s.compact(sid, principal=p),
    "reset": lambda s, sid, p: s.reset(sid, principal=p),
}
#: what the owner and an operator get past the ownership check to: the next check's error
PAST_THE_CHECK: dict[str, type[EveError]] = {
    "respond": InputRequestNotPending,
    "send_event": TaskNotWaiting,
}


@pytest.fixture
def server(make_app: AppFactory) -> Iterator[InProcessServer]:
    root: Path = scripted_app(make_app, [say(f"reply {n}") for n in range(12)])
    running = InProcessServer(root).start()
    try:
        yield running
    finally:
        running.stop()


def outcome(server: InProcessServer, name: str, session_id: str, principal: Principal) -> Any:
    """What the operation answered, or the refusal's (class, code, status)."""
    return outcome_of(server, lambda s: OPERATIONS[name](s, session_id, principal))


def outcome_of(server: InProcessServer, call: Callable[[SessionService], Awaitable[Any]]) -> Any:
    try:
        return on_service(server, call)
    except EveError as error:
        return (type(error).__name__, error.code, error.http_status)


def test_another_principal_gets_what_an_unknown_id_gets_and_the_owner_and_operator_act(
    server: InProcessServer,
) -> None:
    created = on_service(server, lambda s: s.create(principal=ALICE))
    session = created.session_id
    for name in OPERATIONS:
        unknown = outcome(server, name, "ses_unknown", BOB)
        assert isinstance(unknown, tuple), name
        assert outcome(server, name, session, BOB) == unknown, name
    assert unknown[1:] == ("session_not_active", 409)  # reset, as for an unknown id
    assert outcome(server, "summary", session, BOB)[1:] == ("session_not_found", 404)
    for who in (ALICE, OPERATOR):
        for name in OPERATIONS:
            got = outcome(server, name, session, who)
            if name in PAST_THE_CHECK:
                assert got[0] == PAST_THE_CHECK[name].__name__, (who.id, name)
            else:
                assert not isinstance(got, tuple), (who.id, name, got)
    summary = on_service(server, lambda s: s.summary(session, principal=ALICE))
    assert (summary.owner.id, summary.owner.kind) == (ALICE.id, "user")


def test_a_message_refused_to_another_principal_takes_no_turn_number(
    server: InProcessServer,
) -> None:
    """The owner is checked in the claim's transaction: a refusal rolls the claim back."""
    session = on_service(server, lambda s: s.create(principal=ALICE)).session_id
    assert outcome(server, "send", session, BOB)[1:] == ("session_not_active", 409)
    sent = on_service(server, lambda s: s.send(session, "mine", principal=ALICE))
    assert sent.turn_id == "turn_0"


def test_the_list_shows_a_principal_its_own_sessions_and_an_operator_all(
    server: InProcessServer,
) -> None:
    mine = [on_service(server, lambda s: s.create(principal=ALICE)).session_id for _ in "ab"]
    theirs = on_service(server, lambda s: s.create(principal=BOB)).session_id
    ops = on_service(server, lambda s: s.create()).session_id

    def listed(principal: Principal, limit: int = 10) -> list[tuple[str, str]]:
        page = on_service(
            server, lambda s: s.list_page(limit=limit, cursor=None, principal=principal)
        )
        return [(e.session_id, e.owner.id if e.owner else "") for e in page.sessions]

    assert listed(ALICE) == [(mine[1], ALICE.id), (mine[0], ALICE.id)]
    assert listed(BOB) == [(theirs, BOB.id)]
    assert [sid for sid, _ in listed(OPERATOR)] == [ops, theirs, mine[1], mine[0]]
    # a page of one, then its cursor: still only alice's
    first = on_service(server, lambda s: s.list_page(limit=1, cursor=None, principal=ALICE))
    cursor = first.next_cursor
    rest = on_service(server, lambda s: s.list_page(limit=5, cursor=cursor, principal=ALICE))
    assert [e.session_id for e in rest.sessions] == [mine[0]] and rest.next_cursor is None


def test_an_idempotency_key_is_the_principals_own(server: InProcessServer) -> None:
    def create(principal: Principal) -> Any:
        return on_service(server, lambda s: s.create("hi", key="k-1", principal=principal))

    first, other, again = create(ALICE), create(BOB), create(ALICE)
    assert other.session_id != first.session_id and not other.replayed
    assert (again.session_id, again.replayed) == (first.session_id, True)
    # on a session's route too: the operator's key is not its owner's
    session = first.session_id

    def send(principal: Principal) -> Any:
        return on_service(server, lambda s: s.send(session, "more", key="k-2", principal=principal))

    assert [send(ALICE).turn_id, send(OPERATOR).turn_id] == ["turn_1", "turn_2"]
    assert send(ALICE).replayed


def test_a_channel_acts_as_its_principal(server: InProcessServer) -> None:
    async def mine(service: SessionService) -> str:
        created = await ChannelSessions(service, ALICE).create()
        summary = await ChannelSessions(service, ALICE).summary(created.session_id)
        return summary.owner.id if summary.owner else ""

    assert on_service(server, mine) == ALICE.id
    session = on_service(server, lambda s: s.create()).session_id
    refused = outcome_of(server, lambda s: ChannelSessions(s, BOB).summary(session))
    assert refused == ("SessionNotFound", "session_not_found", 404)
