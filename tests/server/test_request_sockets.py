"""An epoll set of the worker's request sockets, asked with the interpreter's lock held
(``eve/server/request_sockets.py``)."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator

import pytest

from eve.server.request_sockets import EpollWatch, epoll_watch

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="epoll is Linux's")


@pytest.fixture
def watch() -> Iterator[EpollWatch]:
    made = epoll_watch()
    assert made is not None
    yield made
    made.close()


@linux
def test_a_watched_socket_is_readable_once_bytes_wait_there(watch: EpollWatch) -> None:
    server, client = socket.socketpair()
    try:
        watch.watch(server.fileno())
        assert not watch.any_readable()
        client.send(b"GET / HTTP/1.1\r\n")
        assert watch.any_readable()
        server.recv(100)  # the loop read it
        assert not watch.any_readable()
        assert (watch.found, watch.none) == (1, 2)
    finally:
        server.close()
        client.close()


@linux
def test_a_closed_socket_leaves_the_set_and_its_number_can_be_watched_again(
    watch: EpollWatch,
) -> None:
    first, first_peer = socket.socketpair()
    watch.watch(first.fileno())
    watch.watch(first.fileno())  # twice: the second is a change, not an error
    number = first.fileno()
    first.close()
    first_peer.close()
    assert not watch.any_readable()
    again, again_peer = socket.socketpair()
    try:
        # a new socket may take the closed one's number
        watch.watch(again.fileno())
        watch.watch(number)  # watching a number no socket holds says nothing
        again_peer.send(b"x")
        assert watch.any_readable()
    finally:
        again.close()
        again_peer.close()


@linux
def test_a_listening_socket_is_readable_while_a_connection_waits(watch: EpollWatch) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        watch.watch(listener.fileno())
        assert not watch.any_readable()
        client = socket.create_connection(listener.getsockname()[:2])
        try:
            assert watch.any_readable()
        finally:
            client.close()
    finally:
        listener.close()


def test_where_epoll_is_not_there_there_is_no_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert epoll_watch() is None
