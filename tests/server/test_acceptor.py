"""A worker accepts every waiting connection when its socket is readable, not one per turn
of the event loop (libuv's way): a busy loop left hundreds queued for tens of seconds."""

from __future__ import annotations

import asyncio
import contextlib
import resource
import socket
import sys
from collections.abc import Iterator

import pytest
import uvloop

from eve.server.acceptor import Acceptor, accepts_one_per_turn
from eve.server.request_sockets import epoll_watch
from eve.server.serving_loop import ServingLoop
from eve.server.workers import Listen, bind


class _Counted(asyncio.Protocol):
    def __init__(self, made: list[asyncio.BaseTransport], enough: int, done: asyncio.Event):
        self.made, self.enough, self.done = made, enough, done

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.made.append(transport)
        if len(self.made) >= self.enough:
            self.done.set()


@contextlib.contextmanager
def _waiting(count: int) -> Iterator[tuple[socket.socket, list[socket.socket]]]:
    """A listening socket with ``count`` connections the kernel completed, none accepted."""
    listener = bind(Listen(host="127.0.0.1", port=0))
    clients = [socket.create_connection(listener.getsockname()[:2]) for _ in range(count)]
    try:
        yield listener, clients
    finally:
        for client in clients:
            client.close()
        listener.close()


async def _accepting(count: int, batch: int) -> tuple[int, int]:
    """How many one readiness accepted, and how many the loop connected in the end."""
    loop = asyncio.get_running_loop()
    made: list[asyncio.BaseTransport] = []
    done = asyncio.Event()
    with _waiting(count) as (listener, _clients):
        acceptor = Acceptor(loop, listener, lambda: _Counted(made, count, done), batch=batch)
        try:
            first = acceptor.accept_ready()
            async with asyncio.timeout(10):
                await done.wait()  # the rest on the loop's next readiness of the socket
        finally:
            acceptor.close()
            for transport in made:
                transport.close()
    return first, len(made)


def test_one_readiness_accepts_every_waiting_connection() -> None:
    assert uvloop.run(_accepting(40, batch=128)) == (40, 40)


def test_a_batch_is_bounded_and_the_rest_are_accepted_later() -> None:
    assert uvloop.run(_accepting(12, batch=5)) == (5, 12)


def test_asyncios_own_loop_accepts_the_same_way() -> None:
    assert asyncio.run(_accepting(8, batch=128)) == (8, 8)


def test_only_uvloop_needs_the_acceptor() -> None:
    """asyncio's own servers accept up to the backlog at once; its loop on Windows (the
    proactor) could not watch the socket for an ``Acceptor`` anyway."""
    with contextlib.closing(uvloop.new_event_loop()) as loop:
        assert accepts_one_per_turn(loop)
    with contextlib.closing(asyncio.new_event_loop()) as loop:
        assert not accepts_one_per_turn(loop)


async def _out_of_descriptors() -> tuple[int, int]:
    loop = asyncio.get_running_loop()
    made: list[asyncio.BaseTransport] = []
    done = asyncio.Event()
    with _waiting(1) as (listener, _clients):
        acceptor = Acceptor(loop, listener, lambda: _Counted(made, 1, done))
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        probe = socket.socket()  # the lowest free descriptor: no new one above it
        lowest = probe.fileno()
        probe.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest, hard))
        try:
            starved = acceptor.accept_ready()
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        try:
            async with asyncio.timeout(10):
                await done.wait()  # after the pause, once descriptors are free again
        finally:
            acceptor.close()
            for transport in made:
                transport.close()
    return starved, len(made)


def test_out_of_descriptors_it_pauses_and_accepts_the_connection_later(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("eve.server.acceptor.RESOURCE_PAUSE_SECONDS", 0.05)
    assert uvloop.run(_out_of_descriptors()) == (0, 1)
    assert "cannot accept connections for now" in caplog.text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="epoll is Linux's")
def test_a_connection_accepted_while_the_turns_work_waits_is_made_before_that_work() -> None:
    """On a loop that runs requests first, a connection is a request's: handed over before
    the turns' work, and its bytes looked for between two slices from then on."""
    loop = ServingLoop(0.0, watch=epoll_watch(), turn_every=60.0)  # a slice: one callback
    ran: list[str] = []

    class Made(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            ran.append("made")
            transport.close()

    async def main() -> None:
        with _waiting(1) as (listener, [client]):
            client.send(b"GET")  # the request's bytes wait on the connection
            acceptor = Acceptor(loop, listener, Made)
            try:
                for i in range(5):
                    loop.call_soon(ran.append, f"turn {i}")
                assert acceptor.accept_ready() == 1
                done = loop.create_future()
                loop.call_soon(done.set_result, None)
                await done
            finally:
                acceptor.close()

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    # made before the turns' work after the slice that was running (none here, or one)
    assert ran.index("made") <= 1
    assert [step for step in ran if step != "made"] == [f"turn {i}" for i in range(5)]


class _CountedListener(socket.socket):
    """A listening socket that counts the accepts tried on it."""

    tries = 0

    def accept(self) -> tuple[socket.socket, object]:
        self.tries += 1
        return super().accept()


def _between_slices(*, turns: int, connect_at: int) -> tuple[list[str], ServingLoop, int]:
    """What ran (each a slice of its own), the loop, and the accepts tried, when a client
    connects before turn ``connect_at`` of the turns' work."""
    loop = ServingLoop(0.0, watch=epoll_watch(), turn_every=60.0)  # a slice: one callback
    ran: list[str] = []
    listener = _CountedListener()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    class Counting(Acceptor):
        def accept_ready(self) -> int:
            accepted = super().accept_ready()
            if accepted:
                ran.append(f"accepted {accepted} after {loop.turns} turns")
            return accepted

    async def main() -> None:
        clients: list[socket.socket] = []
        acceptor = Counting(loop, listener, asyncio.Protocol)
        try:
            address = listener.getsockname()[:2]
            for i in range(turns):
                if i == connect_at:
                    loop.call_soon(lambda: clients.append(socket.create_connection(address)))
                loop.call_soon(ran.append, f"turn {i}")
            done = loop.create_future()
            loop.call_soon(done.set_result, None)
            await done
        finally:
            acceptor.close()
            for client in clients:
                client.close()
            listener.close()

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    return ran, loop, listener.tries


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="epoll is Linux's")
def test_a_connection_waiting_while_the_turns_work_runs_is_accepted_between_two_slices() -> None:
    ran, _loop, _tries = _between_slices(turns=3, connect_at=0)
    assert ran == ["accepted 1 after 0 turns", "turn 0", "turn 1", "turn 2"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="epoll is Linux's")
def test_between_slices_an_accept_is_tried_only_when_a_connection_waits() -> None:
    """A failed accept on the idle socket costs several microseconds and the loop pauses
    between slices thousands of times a second: the pauses look at the socket first."""
    ran, loop, tries = _between_slices(turns=50, connect_at=26)
    assert loop.slices >= 51  # as many pauses between slices, each one a look
    # one accept for the connection, one that found none left: none in the other pauses
    assert tries == 2
    assert ran[ran.index("turn 25") + 1 : ran.index("turn 26")] == ["accepted 1 after 0 turns"]
    assert len(ran) == 51
