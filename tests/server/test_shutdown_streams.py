"""A server that stops while clients follow event streams ends each stream as a whole
response, and says so in one line: 50 followers were 50 tracebacks of a cancelled request,
and a wait for uvicorn's graceful timeout to run out."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx

from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import Server, count

FOLLOWERS = 50


def test_stopping_ends_every_followed_stream_in_one_line(
    make_app: AppFactory, tmp_path: Path
) -> None:
    root = scripted_app(make_app, [say("hello")])
    server = Server(root, log_path=tmp_path / "serve.log").start()
    following = threading.Barrier(FOLLOWERS + 1, timeout=60)
    ends: list[str] = []

    def follow(session: str) -> None:
        try:
            with server.stream(f"/session/{session}/stream?startIndex=0") as response:
                lines = response.iter_lines()
                next(lines)  # the stream is open and served
                following.wait()
                for _ in lines:
                    pass
            ends.append("ended")  # the body ended as a whole response
        except httpx.HTTPError as error:
            ends.append(type(error).__name__)

    try:
        session = server.create("hi")
        server.wait_for(session, count("session.waiting"))
        clients = [threading.Thread(target=follow, args=(session,)) for _ in range(FOLLOWERS)]
        for client in clients:
            client.start()
        following.wait()
    finally:
        output = server.stop()  # SIGTERM
    for client in clients:
        client.join(30)

    assert server.proc is not None and server.proc.poll() is not None
    assert ends == ["ended"] * FOLLOWERS
    assert "Traceback" not in output, output
    said = [line for line in output.splitlines() if "stream" in line or "Cancel" in line]
    assert said == [
        f"ending {FOLLOWERS} followed event stream(s) for shutdown; "
        "their clients reconnect from their next index"
    ], output
