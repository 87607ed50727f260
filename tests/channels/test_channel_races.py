"""What a channel decides about a session (does a message answer what waits, or start a turn?)
is the engine's word, not the log's: the log's writer flushes a moment after the engine acts.

Each test holds the session in the state that moment leaves it in, by doing the engine's own
first write there (its request row: ``input.open`` writes it before ``input.requested`` is in
the log, ``input.close`` closes it before ``input.resolved`` is), so the race is reproduced
without waiting on the writer's timing.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import pytest

from eve.auth import OPERATOR
from eve.channels.sessions import ChannelSessions
from eve.channels.turn_log import LogHead, log_head, start_turn
from eve.sessions import SessionService
from eve.sessions.turn_workflow import turn_workflow_id
from tests.channels.agent_app import write_app
from tests.conftest import wait_for_file
from tests.sessions.harness import Event, count
from tests.sessions.inprocess import InProcessServer

T = TypeVar("T")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    running = InProcessServer(write_app(tmp_path_factory.mktemp("races"))).start()
    yield running
    running.stop()


def service_of(server: InProcessServer) -> SessionService:
    service: SessionService = server.http.app.state.service  # type: ignore[union-attr]
    return service


def on_server(
    server: InProcessServer, work: Callable[[ChannelSessions], Awaitable[T]]
) -> Future[T]:
    """``work`` on the server's own loop, as a channel's request runs it."""
    assert server.http is not None and server.http.portal is not None
    sessions = ChannelSessions(service_of(server), OPERATOR)
    return server.http.portal.start_task_soon(work, sessions)


def parked_on_ship(server: InProcessServer) -> tuple[str, dict[str, Any]]:
    """A session whose second turn waits on a person's approval of ``ship``."""
    session = server.create("what is tea?")
    server.wait_for(session, count("session.waiting"))
    server.send(session, "ship the book")
    events = server.wait_for(session, count("turn.waiting"))
    [request] = [r for e in events if e["type"] == "input.requested" for r in e["data"]["requests"]]
    return session, request


def test_an_answer_the_engine_took_is_not_asked_for_again(server: InProcessServer) -> None:
    session, request = parked_on_ship(server)
    # the engine took the answer (its row is closed); its input.resolved is not written yet
    service_of(server).store.resolve_input_request(request["request_id"])
    started = on_server(
        server, lambda sessions: start_turn(sessions, session, "and now?", param="messages")
    ).result(timeout=30)
    # from the log alone, "and now?" was refused as a wrong answer (ChannelAnswerExpected)
    assert started.turn_id == "turn_2"
    assert started.start == len(server.events(session))


def released_head(server: InProcessServer, session: str, root: Path) -> tuple[LogHead, Event]:
    """While the session's ``hold`` turn runs, the engine opens a request whose event is not
    in the log; then the turn ends. What ``log_head`` said, and the turn's end."""
    workflow = turn_workflow_id(session, 2)
    service_of(server).store.add_input_request("inp_unflushed", session, workflow)
    head = on_server(server, lambda sessions: log_head(sessions, session))
    feeds = service_of(server).log.feeds.feeds
    deadline = time.monotonic() + 30
    while session not in feeds:  # log_head follows the log, waiting for the request
        assert not head.done(), head.result()
        assert time.monotonic() < deadline, "log_head never followed the log"
        time.sleep(0.01)
    (root / f"release-{session}").write_text("go")
    ended = server.wait_for(session, count("turn.completed", 3))
    [completed] = [e for e in ended if e["type"] == "turn.completed"][2:]
    return head.result(timeout=30), completed


def test_a_request_the_log_does_not_show_yet_is_waited_for(server: InProcessServer) -> None:
    session, request = parked_on_ship(server)
    server.answer(session, request["request_id"], "approve")
    server.wait_for(session, count("session.waiting", 2))
    server.send(session, "hold on")
    wait_for_file(server.app_root / f"hold-{session}.started")
    head, completed = released_head(server, session, server.app_root)
    # it settled with the turn's end (a turn that ended took its request along), not with
    # the log as it stood when asked, which showed nothing waiting
    assert head.pending == []
    assert head.next_index > completed["meta"]["index"]
