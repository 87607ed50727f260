"""How ``eve serve`` listens, serves and stops: connections with Nagle's algorithm off and
kept alive between a client's messages, uvloop and httptools where installed, and a stop
that does not wait on followed event streams, which never end by themselves."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import threading

import httpx
import pytest
import uvloop
from click.testing import CliRunner
from starlette.applications import Starlette
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from eve.cli import main
from eve.errors import ServerConfigError
from eve.server.serving import serving_protocol
from eve.server.serving_loop import ServingLoop
from eve.server.slices import DEFAULT_SLICE_MS, SLICE_ENV, slice_ms
from eve.server.workers import KEEP_ALIVE_SECONDS, Listen, bind, server_config, serving_loop
from eve.sessions.claim_now import LOOP_PATIENCE_SECONDS, patience_on
from tests.conftest import AppFactory
from tests.server.test_stream_chunks import chunks_until_waiting
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import Server, count
from tests.sessions.inprocess import InProcessServer


def test_accepted_connections_have_tcp_nodelay() -> None:
    """uvicorn writes a response's head and body in two sends; with Nagle on, the body of
    every answer on a kept-alive connection waited for the client's delayed ACK (~40 ms)."""
    listener = bind(Listen(host="127.0.0.1", port=0))
    try:
        client = socket.create_connection(listener.getsockname()[:2])
        accepted, _ = listener.accept()
        try:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        finally:
            accepted.close()
            client.close()
    finally:
        listener.close()


def test_sigterm_stops_the_server_while_a_client_follows_a_stream(make_app: AppFactory) -> None:
    server = Server(make_app()).start()
    session = server.create()
    following = threading.Event()
    ended = threading.Event()

    def follow() -> None:
        try:
            with server.stream(f"/session/{session}/stream?follow=true") as response:
                for _ in response.iter_lines():
                    following.set()
        except httpx.HTTPError:
            pass  # cut mid-stream: a client reconnects from the next index it needs
        finally:
            ended.set()

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    assert following.wait(30)
    assert server.proc is not None
    server.proc.send_signal(signal.SIGTERM)
    try:
        # a hang guard, not a timing: before the bound, this waited as long as the follower
        status = server.proc.wait(30)
    finally:
        server.stop()
    assert status in (0, -signal.SIGTERM)
    assert ended.wait(10)


def test_a_worker_serves_on_uvloop_and_httptools() -> None:
    assert serving_loop({SLICE_ENV: "off"}) is uvloop.new_event_loop  # requests first unless off
    config = server_config(Starlette())
    config.load()
    assert config.http_protocol_class is HttpToolsProtocol
    # uvicorn's hook to start a request's task, which marks it as serving: an uvicorn
    # without it would serve every request behind the turns' work
    assert serving_protocol(HttpToolsProtocol) is not HttpToolsProtocol
    # past a chat client's pause between messages, and a load balancer's idle timeout
    assert config.timeout_keep_alive == KEEP_ALIVE_SECONDS > 60


def test_a_workers_post_says_its_time_inside_the_server_and_where_its_claim_ran(
    make_app: AppFactory,
) -> None:
    """A real worker whose loop runs requests first."""
    app_root = scripted_app(make_app, [say("one"), say("two")])
    server = Server(app_root).start()  # requests first by default
    try:
        session = server.create("hi")
        server.wait_for(session, count("session.waiting"))
        sent = server.send(session, "again")
        server.wait_for(session, count("session.waiting", 2))
    finally:
        server.stop()
    assert sent.status_code == 202
    answer, claim = sent.headers["server-timing"].split(", ")
    assert answer.startswith("answer;dur=") and float(answer.split("=")[1]) > 0
    # on the loop unless a background write held the file at that moment
    assert claim.startswith("claim;dur=") and claim.endswith((';desc="loop"', ';desc="thread"'))


def _made(factory: object) -> asyncio.AbstractEventLoop:
    assert callable(factory)
    loop: asyncio.AbstractEventLoop = factory()
    loop.close()
    return loop


def test_the_turns_slice_is_eves_default_set_or_off() -> None:
    for unset in ({}, {SLICE_ENV: " "}):
        made = _made(serving_loop(unset))
        assert isinstance(made, ServingLoop) and made.slice_seconds == DEFAULT_SLICE_MS / 1000
        assert patience_on(made) == LOOP_PATIENCE_SECONDS
        # where epoll is there, the loop asks its request sockets between two slices
        assert made.watch is not None or not sys.platform.startswith("linux")
    made = _made(serving_loop({SLICE_ENV: "0.5"}))
    assert isinstance(made, ServingLoop) and made.slice_seconds == 0.0005
    assert patience_on(_made(serving_loop({SLICE_ENV: " Off "}))) == 0.0
    for bad in ("0", "-1", "1001", "nan", "fast", "٣"):
        with pytest.raises(ServerConfigError, match=SLICE_ENV):
            slice_ms({SLICE_ENV: bad})


def test_eve_serve_refuses_a_slice_it_cannot_read(make_app: AppFactory) -> None:
    root = make_app()
    result = CliRunner().invoke(main, ["-C", str(root), "serve"], env={SLICE_ENV: "0"})
    assert result.exit_code == 2, result.output
    assert f"{SLICE_ENV} must be a number" in result.output


def test_without_uvloop_a_worker_serves_on_asyncios_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as where it does not build (Windows)
    assert serving_loop() is None


def test_a_turn_and_its_followed_stream_on_the_serving_loop(make_app: AppFactory) -> None:
    """DBOS, the threads a turn hands work to and the followers' push all run on uvloop,
    the turns' work in slices."""
    app_root = scripted_app(make_app, [say("hello there"), say("again")])
    server = InProcessServer(app_root, loop_factory=serving_loop({SLICE_ENV: "2"})).start()
    try:
        assert server.http is not None
        assert isinstance(server.http.portal.call(_running_loop), uvloop.Loop)
        session = server.create("hi")
        first_turn = server.wait_for(session, count("session.waiting"))
        with server.stream(f"/session/{session}/stream?startIndex={len(first_turn)}") as response:
            chunks = response.iter_raw()
            assert server.send(session, "more").status_code == 202
            live = [e for chunk in chunks_until_waiting(chunks, waits=1) for e in chunk]
    finally:
        server.stop()
    assert [
        e["data"]["message"] for e in first_turn + live if e["type"] == "message.completed"
    ] == [
        "hello there",
        "again",
    ]


async def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_a_program_a_worker_starts_does_not_hold_the_listening_socket() -> None:
    """uvloop's spawn closes no descriptors: with the socket inheritable, an MCP server on
    stdio kept the port after its worker was killed, and the restarted server could not
    listen ("address already in use")."""
    sock = bind(Listen(host="127.0.0.1", port=0))
    inode = os.fstat(sock.fileno()).st_ino

    async def child_fds() -> str:
        child = await asyncio.create_subprocess_exec(
            "ls", "-l", "/proc/self/fd", stdout=asyncio.subprocess.PIPE
        )
        out, _ = await child.communicate()
        return out.decode()

    try:
        with asyncio.Runner(loop_factory=serving_loop({})) as runner:
            listing = runner.run(child_fds())
    finally:
        sock.close()
    assert f"socket:[{inode}]" not in listing
    assert "/proc/" in listing, "the child listed its descriptors"
