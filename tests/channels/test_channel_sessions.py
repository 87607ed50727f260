"""``ChannelSessions``, the facade every channel kind goes through, holds the ownership rules
for each of its operations: another principal gets what an unknown session id gets."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from eve.auth import Principal
from eve.channels.sessions import ChannelSessions
from eve.errors import EveError
from eve.sessions import InputResponse, SessionService
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.inprocess import InProcessServer

OWNER = Principal(id="owner", kind="user")
OTHER = Principal(id="other", kind="user")

Operation = Callable[[ChannelSessions, str], Awaitable[Any]]


async def _events(sessions: ChannelSessions, session_id: str) -> list[str]:
    return [event async for event in await sessions.events(session_id, follow=False)]


OPERATIONS: dict[str, Operation] = {
    "get": lambda s, sid: s.get(sid),
    "summary": lambda s, sid: s.summary(sid),
    "state": lambda s, sid: s.state(sid),
    "events": _events,
    "send": lambda s, sid: s.send(sid, "hi"),
    "respond": lambda s, sid: s.respond(sid, [InputResponse(request_id="r", option_id="o")]),
    "cancel": lambda s, sid: s.cancel(sid),
    "log_end": lambda s, sid: s.log_end(sid),
    "turn_start": lambda s, sid: s.turn_start(sid, "turn_0"),
    "latest_turn": lambda s, sid: s.latest_turn(sid),
    "open_requests": lambda s, sid: s.open_requests(sid),
    "asking_turn": lambda s, sid: s.asking_turn(sid, ["inp_none"]),
}


@pytest.fixture
def server(make_app: AppFactory) -> Iterator[InProcessServer]:
    running = InProcessServer(scripted_app(make_app, [say("hello")])).start()
    try:
        yield running
    finally:
        running.stop()


def attempt(
    server: InProcessServer,
    who: Principal,
    operation: Operation,
    session: str,
    *,
    acting: Principal | None = None,
) -> Any:
    """``operation`` as ``who`` (acting for ``acting``) on the server's running service: its
    result, or the refusal (the error's name and HTTP status)."""
    assert server.http is not None and server.http.portal is not None
    service: SessionService = server.http.app.state.service  # type: ignore[attr-defined]

    async def run() -> Any:
        try:
            return await operation(ChannelSessions(service, who, acting=acting), session)
        except EveError as error:
            return (type(error).__name__, error.http_status)

    return server.http.portal.call(run)


def test_another_principal_meets_an_unknown_session(server: InProcessServer) -> None:
    session = attempt(server, OWNER, lambda s, _: s.create(), "").session_id
    for name, operation in OPERATIONS.items():
        unknown = attempt(server, OTHER, operation, "ses_unknown")
        assert isinstance(unknown, tuple), (name, unknown)  # refused, with a named error
        assert attempt(server, OTHER, operation, session) == unknown, name
        assert attempt(server, OWNER, operation, session) != unknown, name


def test_acting_for_the_owner_reaches_nothing_the_principal_may_not(
    server: InProcessServer,
) -> None:
    # what may be seen and done is the channel's principal's; the person it acts for only
    # sends the turns and gives the answers
    session = attempt(server, OWNER, lambda s, _: s.create(), "").session_id
    for name, operation in OPERATIONS.items():
        unknown = attempt(server, OTHER, operation, "ses_unknown")
        assert attempt(server, OTHER, operation, session, acting=OWNER) == unknown, name
