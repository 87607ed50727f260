"""A parked turn's mailbox across an upgrade: an answer an older eve sent still continues the
turn; a message no eve sent fails it with a named error."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dbos import DBOS

from eve.sessions.turn_workflow import turn_workflow_id
from tests.conftest import AppFactory
from tests.sessions.harness import Event, count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_approvals import approval_app, request_of


def put(server: InProcessServer, session: str, raw: object) -> None:
    """``raw`` into the parked turn's mailbox as it is, past the session service."""
    assert server.http is not None and server.http.portal is not None

    async def send() -> None:
        await DBOS.send_async(turn_workflow_id(session, 0), raw, "input")

    server.http.portal.call(send)


@dataclass(frozen=True)
class Parked:
    server: InProcessServer
    root: Path
    session: str
    request_id: str


@contextlib.contextmanager
def parked_turn(make_app: AppFactory) -> Iterator[Parked]:
    """A served session whose first turn waits on the approval of a ``ship`` call."""
    root = approval_app(make_app)
    server = InProcessServer(root).start()
    try:
        session = server.create("ship the anvil")
        request = request_of(server.wait_for(session, count("turn.waiting")))
        yield Parked(server, root, session, str(request["request_id"]))
    finally:
        server.stop()


def test_an_answer_an_older_eve_sent_still_continues_the_turn(make_app: AppFactory) -> None:
    with parked_turn(make_app) as parked:
        # the untagged dict an eve before eve.wire.mailbox sent
        older = {
            "request_id": parked.request_id,
            "option_id": "approve",
            "responder": {"id": "operator", "kind": "operator"},
        }
        put(parked.server, parked.session, older)
        events = parked.server.wait_for(parked.session, count("session.waiting"))
    [resolved] = [e["data"] for e in events if e["type"] == "input.resolved"]
    assert resolved["option_id"] == "approve"
    assert resolved["responder"] == {"id": "operator", "kind": "operator"}
    assert (parked.root / "shipped.log").read_text() == "anvil\n"


def test_a_message_no_eve_sent_fails_the_turn_with_a_named_error(make_app: AppFactory) -> None:
    with parked_turn(make_app) as parked:
        put(parked.server, parked.session, {"approve": "yes please"})
        events: list[Event] = parked.server.wait_for(parked.session, count("turn.failed"))
    [failed] = [e["data"] for e in events if e["type"] == "turn.failed"]
    assert failed["error"].startswith("MailboxMessageInvalid: a workflow message eve cannot read")
    assert "yes please" not in failed["error"]
    assert not (parked.root / "shipped.log").exists()
