"""A stream writes the events it has together as one chunk, a socket write, not one per
event: a write is a system call and, on loopback, a wake-up of the client, and they were a
large share of a busy server's time (``bench/scale.py``)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import Event, assert_dense, count
from tests.sessions.inprocess import InProcessServer


def events_of(chunk: bytes) -> list[Event]:
    """A chunk's events; it holds whole lines only."""
    assert chunk.endswith(b"\n"), chunk[-80:]
    return [json.loads(line) for line in chunk.splitlines() if line]


def chunks_until_waiting(chunks: Iterator[bytes], waits: int) -> list[list[Event]]:
    """The chunks read until the ``waits``-th ``session.waiting``, as their events."""
    read: list[list[Event]] = []
    while sum(e["type"] == "session.waiting" for c in read for e in c) < waits:
        read.append(events_of(next(chunks)))
    return read


def test_events_ready_together_are_one_chunk_each(make_app: AppFactory) -> None:
    server = InProcessServer(scripted_app(make_app, [say("hello there"), say("again")])).start()
    try:
        session = server.create("hi")
        first_turn = server.wait_for(session, count("session.waiting"))
        with server.stream(f"/session/{session}/stream?startIndex=0&follow=false") as response:
            bounded = list(response.iter_raw())
        with server.stream(f"/session/{session}/stream?startIndex=0") as response:
            chunks = response.iter_raw()
            # what was written before: the follower's catch-up read, one chunk
            caught_up = events_of(next(chunks))
            assert server.send(session, "more").status_code == 202
            live = chunks_until_waiting(chunks, waits=1)
    finally:
        server.stop()
    # a bounded read's page is one chunk
    assert len(bounded) == 1 and events_of(bounded[0]) == first_turn
    assert caught_up == first_turn
    second_turn = [e for chunk in live for e in chunk]
    assert_dense(caught_up + second_turn)
    # a commit's events share a chunk: the turn came in fewer writes than events
    assert len(live) < len(second_turn), [[e["type"] for e in chunk] for chunk in live]
