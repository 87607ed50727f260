"""``eve.client`` against the server app: every call and errors in process, the stream's
reconnect across a real ``eve serve`` restart."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest

from eve.client import TURN_END, APIError, AsyncEveClient, EveClient, ServerUnreachable
from eve.events import SessionEvent
from tests.conftest import AppFactory, wait_for_file
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Server, free_port
from tests.sessions.inprocess import InProcessServer

TOKEN = "tok_" + "f00dfeed" * 6


def indexes(events: list[SessionEvent]) -> list[int]:
    return [e.meta.index for e in events]


def test_create_send_and_read_each_turn(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("first reply"), say("second reply")])
    server = InProcessServer(root).start()
    try:
        with EveClient(server.url, transport=server.transport()) as client:
            assert client.health() == {"ok": True, "status": "ready"}
            assert client.info()["agent"]["instructions_path"] == "agent/instructions.md"
            first = client.create("hello")
            assert first.status == "accepted" and first.turn_id == "turn_0"
            turn0 = list(client.turn_events(first.session_id, first.turn_id))
            second = client.send(first.session_id, "again")
            turn1 = list(client.turn_events(first.session_id, second.turn_id))
            everything = list(client.stream(first.session_id, follow=False))
    finally:
        server.stop()
    assert turn0[-1].type == "turn.completed" and turn1[-1].type == "turn.completed"
    assert {e.data.turn_id for e in turn0} == {"turn_0"}
    replies = [e.data.message for e in everything if e.type == "message.completed"]
    assert replies == ["first reply", "second reply"]
    assert indexes(everything) == list(range(len(everything)))


def test_a_stream_survives_a_server_restart_without_gap_or_duplicate(
    make_app: AppFactory,
) -> None:
    root = scripted_app(make_app, [call("ship", item="anvil"), say("shipped")], tools=("ship",))
    server = Server(root).start()
    seen: list[SessionEvent] = []
    parked = threading.Event()
    try:
        client = EveClient(server.url, reconnect_timeout=60)
        session = client.create("ship the anvil").session_id

        def read() -> None:
            for event in client.stream(session, until=frozenset({"turn.completed"})):
                seen.append(event)
                if event.type == "turn.waiting":
                    parked.set()

        reader = threading.Thread(target=read)
        reader.start()
        assert parked.wait(30)
        server.kill()  # the reader's connection drops mid-stream
        server.restart()
        [request] = next(e for e in seen if e.type == "input.requested").data.requests
        assert client.respond(session, {request.request_id: "approve"}).status == "resolved"
        reader.join(30)
        assert not reader.is_alive()
        client.close()
    finally:
        server.stop()
    assert indexes(seen) == list(range(len(seen)))
    assert seen[-1].type == "turn.completed"
    assert [e.type for e in seen].count("input.requested") == 1


def test_errors_are_named_with_the_servers_code(make_app: AppFactory) -> None:
    server = InProcessServer(
        scripted_app(make_app, [say("hi")]), env={"EVE_API_TOKEN": TOKEN}
    ).start()
    try:
        with EveClient(server.url, transport=server.transport()) as anonymous:
            assert anonymous.health()["ok"] is True  # health needs no token
            with pytest.raises(APIError) as refused:
                anonymous.create("hi")
            assert (refused.value.status, refused.value.code) == (401, "unauthorized")
        with EveClient(server.url, token=TOKEN, transport=server.transport()) as client:
            with pytest.raises(APIError) as unknown:
                client.send("sess_nope", "hi")
            assert (unknown.value.status, unknown.value.code) == (409, "session_not_active")
            session = client.create().session_id
            with pytest.raises(APIError) as stale:
                client.respond(session, {"req_nope": "approve"})
            assert stale.value.code == "input_request_not_pending"
            assert client.cancel(session).status == "no_active_turn"
    finally:
        server.stop()
    assert TOKEN not in str(refused.value)


class _LosesFirstAnswers(httpx.BaseTransport):
    """Delivers every request, but drops the answer to the first try of each POST, as a
    connection cut (or a server killed) after the server acted would."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.keys: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.method == "POST":
            key = request.headers["idempotency-key"]
            self.keys.append(key)
            if self.keys.count(key) == 1:
                raise httpx.ReadError("connection lost before the answer", request=request)
        return response


def test_a_post_whose_answer_was_lost_is_retried_once_in_effect(make_app: AppFactory) -> None:
    server = InProcessServer(scripted_app(make_app, [say("one"), say("two")])).start()
    lossy = _LosesFirstAnswers(server.transport())
    try:
        with EveClient(server.url, transport=lossy) as client:
            first = client.create("hello")
            second = client.send(first.session_id, "again")
            events = list(client.turn_events(first.session_id, second.turn_id))
            everything = list(client.stream(first.session_id, follow=False))
    finally:
        server.stop()
    # each call went twice with its own key, and the server acted once per key
    assert len(lossy.keys) == 4 and len(set(lossy.keys)) == 2
    assert (first.turn_id, second.turn_id) == ("turn_0", "turn_1")
    assert events[-1].type == "turn.completed"
    received = [e.data.message for e in everything if e.type == "message.received"]
    assert received == ["hello", "again"]


def test_an_absent_server_is_unreachable_not_a_hang() -> None:
    with EveClient(f"http://127.0.0.1:{free_port()}", reconnect_timeout=0.5) as client:
        with pytest.raises(ServerUnreachable, match="is `eve serve` running"):
            client.create("hi")
        with pytest.raises(ServerUnreachable, match=r"did not answer for 0\.5 s"):
            list(client.stream("sess_any"))


def test_the_async_client_runs_parks_and_cancels(make_app: AppFactory) -> None:
    root = scripted_app(
        make_app,
        [call("ship", item="anvil"), call("slowly", seconds=60), say("never")],
        tools=("ship", "slowly"),
    )
    server = InProcessServer(root).start()

    async def converse() -> list[SessionEvent]:
        async with AsyncEveClient(server.url, transport=server.async_transport()) as client:
            accepted = await client.create("ship, then wait")
            parked = [e async for e in client.turn_events(accepted.session_id, accepted.turn_id)]
            assert parked[-1].type == "turn.waiting"
            [request] = next(e for e in parked if e.type == "input.requested").data.requests
            await client.respond(accepted.session_id, {request.request_id: "approve"})
            started = root / f"slowly-{accepted.session_id}.started"
            await asyncio.to_thread(wait_for_file, started)
            assert (await client.cancel(accepted.session_id)).status == "cancelling"
            return [
                e
                async for e in client.stream(accepted.session_id, until=TURN_END - {"turn.waiting"})
            ]

    try:
        events = asyncio.run(converse())
    finally:
        server.stop()
    assert events[-1].type == "turn.cancelled"
    assert (root / "shipped.log").read_text() == "anvil\n"
