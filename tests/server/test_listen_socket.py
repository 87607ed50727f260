"""The socket ``eve serve`` listens on hands out connections with Nagle's algorithm off:
uvicorn writes a response's head and body in two sends, and with Nagle on, the body of every
answer on a kept-alive connection waited for the client's delayed ACK (~40 ms)."""

from __future__ import annotations

import socket

from eve.server.workers import Listen, bind


def test_accepted_connections_have_tcp_nodelay() -> None:
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
