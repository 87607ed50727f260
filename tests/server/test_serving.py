"""How ``eve serve`` listens and stops: connections with Nagle's algorithm off, and a stop
that does not wait on followed event streams, which never end by themselves."""

from __future__ import annotations

import signal
import socket
import threading

import httpx

from eve.server.workers import Listen, bind
from tests.conftest import AppFactory
from tests.sessions.harness import Server


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
