"""A server that stops while clients follow event streams ends each stream as a whole
response, and says so in one line: 50 followers were 50 tracebacks of a cancelled request,
and a wait for uvicorn's graceful timeout to run out."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import Server, count, follow_to_end

FOLLOWERS = 50


def test_stopping_ends_every_followed_stream_in_one_line(
    make_app: AppFactory, tmp_path: Path
) -> None:
    root = scripted_app(make_app, [say("hello")])
    server = Server(root, log_path=tmp_path / "serve.log").start()
    following = threading.Barrier(FOLLOWERS + 1, timeout=60)
    with ThreadPoolExecutor(FOLLOWERS) as pool:
        try:
            session = server.create("hi")
            server.wait_for(session, count("session.waiting"))
            ends = [
                pool.submit(follow_to_end, server, session, following=following)
                for _ in range(FOLLOWERS)
            ]
            following.wait()
        finally:
            output = server.stop()  # SIGTERM
        ended = [end.result(timeout=30) for end in ends]

    assert server.proc is not None and server.proc.poll() is not None
    assert ended == ["ended"] * FOLLOWERS
    assert "Traceback" not in output, output
    said = [line for line in output.splitlines() if "stream" in line or "Cancel" in line]
    assert said == [
        f"ending {FOLLOWERS} followed event stream(s) for shutdown; "
        "their clients reconnect from their next index"
    ], output
