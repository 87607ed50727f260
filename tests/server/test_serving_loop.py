"""A worker's loop runs what serves a request before the turns' work, which runs whole and
in order in slices (``eve/server/serving_loop.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from eve.server.request_sockets import EpollWatch, epoll_watch
from eve.server.serving import SERVING, answered, serving_context, serving_protocol
from eve.server.serving_loop import ServingLoop, new_serving_loop
from eve.server.slices import SLICE_ENV, slices_for_backend

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="epoll is Linux's")


@pytest.fixture
def loop() -> Any:
    made = new_serving_loop()
    assert isinstance(made, ServingLoop)
    yield made
    made.close()


def test_a_request_runs_before_the_turns_work_waiting_and_that_work_runs_in_order(
    loop: ServingLoop,
) -> None:
    loop.slice_seconds = 0.0  # a slice runs one callback
    ran: list[str] = []

    async def main() -> None:
        for n in range(5):
            loop.call_soon(ran.append, f"turn {n}")
        serving_context().run(loop.call_soon, ran.append, "request")
        done = loop.create_future()
        loop.call_soon(done.set_result, None)
        await done

    loop.run_until_complete(main())
    # the request's callback was scheduled last and ran first; the turns' in order after it
    assert ran == ["request", "turn 0", "turn 1", "turn 2", "turn 3", "turn 4"]
    assert loop.slices >= 5


def test_a_request_task_and_what_it_awaits_go_first_until_it_is_answered(
    loop: ServingLoop,
) -> None:
    async def request() -> tuple[bool, bool]:
        serving = SERVING.get()
        assert serving is not None
        await asyncio.sleep(0)  # its steps are scheduled as serving
        before = serving.urgent
        answered()
        return before, serving.urgent

    async def main() -> tuple[bool, bool]:
        deferred_before = loop.deferred
        task = loop.create_task(request(), context=serving_context())
        result = await task
        # the task's steps were not deferred; this coroutine's own wake-up was
        assert loop.deferred - deferred_before == 1
        return result

    assert loop.run_until_complete(main()) == (True, False)


def test_a_deferred_callback_can_be_cancelled_and_its_error_is_reported(
    loop: ServingLoop,
) -> None:
    ran: list[str] = []
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))

    def fail() -> None:
        raise LookupError("in a callback")

    async def main() -> None:
        loop.call_soon(ran.append, "cancelled").cancel()
        loop.call_soon(fail)
        loop.call_soon(ran.append, "after")
        await asyncio.sleep(0.01)

    loop.run_until_complete(main())
    assert ran == ["after"]
    assert [type(e.get("exception")) for e in errors] == [LookupError]


@linux
def test_with_no_request_waiting_the_slices_run_without_a_turn_of_the_loop() -> None:
    loop = _loop(watch=epoll_watch())
    assert _turns_work_ran(loop) == [f"turn {i}" for i in range(5)]
    assert loop.slices >= 5 and loop.turns == 0


def test_without_the_set_the_loop_takes_a_turn_after_every_slice() -> None:
    loop = _loop(watch=None)
    assert _turns_work_ran(loop) == [f"turn {i}" for i in range(5)]
    assert loop.turns >= 4


@linux
def test_the_loop_takes_a_turn_at_least_every_so_often() -> None:
    loop = _loop(watch=epoll_watch(), turn_every=0.0)
    assert _turns_work_ran(loop) == [f"turn {i}" for i in range(5)]
    assert loop.turns >= 4


@contextlib.contextmanager
def _socket_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected pair: the server's end (not blocking, as a request's socket) and the
    client's; both closed after the block."""
    server, client = socket.socketpair()
    server.setblocking(False)
    try:
        yield server, client
    finally:
        server.close()
        client.close()


@linux
def test_bytes_waiting_on_a_watched_socket_give_the_loop_a_turn_before_the_next_slice() -> None:
    loop = _loop(watch=epoll_watch())
    reads: list[str] = []
    with _socket_pair() as (server, client):
        loop.add_reader(server.fileno(), lambda: reads.append(f"read {server.recv(10)!r}"))
        ran = _turns_work_ran(loop, first=lambda: client.send(b"GET"), also=reads)
    # the request was read after the slice that sent it, not after all the turns' work,
    # and the loop took no other turn
    assert ran == ["read b'GET'", "turn 0", "turn 1", "turn 2", "turn 3", "turn 4"]
    assert loop.turns == 1


@linux
def test_an_answer_polled_between_slices_is_read_there_without_a_turn() -> None:
    loop = _loop(watch=epoll_watch())
    reads: list[str] = []
    with _socket_pair() as (server, client):

        def read() -> None:
            with contextlib.suppress(BlockingIOError):
                reads.append(f"read {server.recv(10)!r}")

        # the socket is a reader too (which alone would cost a turn), as a claim's is
        loop.add_reader(server.fileno(), read)
        stop = loop.poll_between_slices(read)
        try:
            ran = _turns_work_ran(loop, first=lambda: client.send(b"answer"), also=reads)
        finally:
            stop()
    assert ran == ["read b'answer'", "turn 0", "turn 1", "turn 2", "turn 3", "turn 4"]
    assert loop.turns == 0
    assert not loop._polls


@linux
def test_a_request_waiting_between_slices_runs_once_a_slice_and_last_when_the_work_ends() -> None:
    loop = _loop(watch=epoll_watch())  # no request's bytes wait: no turn of uvloop's loop
    tries: list[str] = []

    async def retrying() -> None:
        # a request trying again once a slice, until no turns' work is left
        while (paused := loop.between_slices()) is not None:
            tries.append("try")
            await paused
        tries.append("no slices")

    def request() -> None:
        tasks.append(serving_context().run(loop.create_task, retrying()))

    tasks: list[asyncio.Task[None]] = []
    ran = _turns_work_ran(loop, first=request, n=3, also=tries)
    assert ran[:6] == ["try", "turn 0", "try", "turn 1", "try", "turn 2"]
    # then once a slice of what the test itself left (its own steps), and last at the end
    assert set(ran[6:-1]) == {"try"} and ran[-1] == "no slices"
    assert tasks[0].done() and not loop._polls and loop.turns == 0


def test_no_pause_between_slices_is_waited_for_when_no_turns_work_waits(loop: Any) -> None:
    async def main() -> asyncio.Future[None] | None:
        return loop.between_slices()

    request = serving_context().run(loop.create_task, main())  # no turns' work: none queued
    assert loop.run_until_complete(request) is None


def test_a_check_between_slices_that_fails_is_reported_and_the_slices_go_on() -> None:
    loop = _loop(watch=None)
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))

    def broken() -> None:
        raise RuntimeError("broken check")

    loop.poll_between_slices(broken)
    assert _turns_work_ran(loop) == [f"turn {i}" for i in range(5)]
    assert errors and str(errors[0]["exception"]) == "broken check"


@linux
def test_a_requests_callback_scheduled_in_a_slice_runs_before_the_next_one_without_a_turn() -> None:
    loop = _loop(watch=epoll_watch())
    requests: list[str] = []

    def turn_answering_a_request() -> None:
        # the turns' work, scheduling a request's callback (a socket's data would)
        serving_context().run(loop.call_soon, requests.append, "request")

    ran = _turns_work_ran(loop, first=turn_answering_a_request, also=requests)
    assert ran == ["request", "turn 0", "turn 1", "turn 2", "turn 3", "turn 4"]
    assert loop.turns == 0


@linux
def test_while_a_requests_thread_runs_the_loop_takes_a_turn_after_every_slice() -> None:
    loop = _loop(watch=epoll_watch())
    release = threading.Event()
    claims: list[asyncio.Future[bool]] = []

    def claim() -> None:
        claims.append(serving_context().run(loop.run_in_executor, None, release.wait, 10))

    ran = _turns_work_ran(loop, first=claim, n=20, last=release.set)
    assert ran == [f"turn {i}" for i in range(20)]
    assert loop.turns >= 20
    assert claims[0].result() is True
    assert loop._requests_in_threads == 0


@linux
def test_a_requests_connection_is_watched_once_it_is_made() -> None:
    """``serving_protocol`` has the loop watch each connection uvicorn's protocol makes."""

    class Protocol(asyncio.Protocol):
        # the part of uvicorn's httptools protocol ``serving_protocol`` builds on
        def __init__(self, made: asyncio.Future[None]) -> None:
            self.loop = asyncio.get_running_loop()
            self.made = made

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.made.set_result(None)

        def _start_asgi_task(self) -> None:
            raise AssertionError("no request is parsed here")

    loop = _loop(watch=epoll_watch())
    assert loop.watch is not None
    watch = loop.watch

    async def main() -> tuple[bool, bool]:
        made = loop.create_future()
        listener = socket.create_server(("127.0.0.1", 0))
        server = await loop.create_server(lambda: serving_protocol(Protocol)(made), sock=listener)
        port = listener.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        await made
        before = watch.any_readable()
        writer.write(b"GET / HTTP/1.1\r\n")
        # in this step (nothing awaited): the loop reads nothing meanwhile; looked for until
        # the bytes arrive, since a loaded machine's kernel may deliver them late
        deadline = time.monotonic() + 10
        while not (after := watch.any_readable()) and time.monotonic() < deadline:
            time.sleep(0.01)
        writer.close()
        server.close()
        return before, after

    try:
        assert loop.run_until_complete(main()) == (False, True)
    finally:
        loop.close()


def _loop(*, watch: EpollWatch | None, turn_every: float = 60.0) -> ServingLoop:
    # a slice runs one callback
    return ServingLoop(0.0, watch=watch, turn_every=turn_every)


def _turns_work_ran(
    loop: ServingLoop,
    *,
    first: Callable[[], object] = lambda: None,
    last: Callable[[], object] = lambda: None,
    n: int = 5,
    also: list[str] | None = None,
) -> list[str]:
    """What ran, in order (into ``also`` too, if given), as ``loop`` ran ``first``, ``n``
    callbacks of the turns' work, then ``last``, all scheduled at once; closes ``loop``."""
    ran = [] if also is None else also

    async def main() -> None:
        loop.call_soon(first)
        for i in range(n):
            loop.call_soon(ran.append, f"turn {i}")
        loop.call_soon(last)
        done = loop.create_future()
        loop.call_soon(done.set_result, None)  # after the turns' work scheduled before it
        await done
        while loop._requests_in_threads:
            await asyncio.sleep(0.001)

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    return ran


def test_a_loop_that_stops_slicing_runs_what_it_deferred_first_then_as_uvloop_does() -> None:
    loop = _loop(watch=None)

    def stop_then_more(ran: list[str]) -> None:
        loop.stop_slicing()
        loop.call_soon(ran.append, "after the stop")

    ran: list[str] = []
    _turns_work_ran(loop, first=lambda: stop_then_more(ran), also=ran)
    # deferred before the stop, so run before it: the turns' order holds
    assert ran == [*(f"turn {i}" for i in range(5)), "after the stop"]
    assert not loop.slicing and not loop.requests_first


@pytest.mark.parametrize(
    ("postgres", "env", "claims_on_loop", "slicing"),
    [
        (True, {}, False, False),
        (True, {SLICE_ENV: "2"}, False, True),
        (True, {}, True, True),
        (False, {}, False, True),
    ],
)
def test_on_postgresql_the_slices_stop_unless_set_or_the_claims_run_on_the_loop(
    postgres: bool, env: dict[str, str], claims_on_loop: bool, slicing: bool
) -> None:
    loop = _loop(watch=None)
    try:
        slices_for_backend(loop, postgres=postgres, env=env, claims_on_loop=claims_on_loop)
        assert loop.slicing is slicing
    finally:
        loop.close()
