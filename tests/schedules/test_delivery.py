"""A schedule's answer delivered to a webhook once its turn ends, and the long-lived session
a ``session:`` schedule runs every tick in."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.conftest import AppFactory
from tests.schedules.apps import md_schedule, scheduled_sessions, wait_until
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A loopback receiver: its URL, and the JSON bodies POSTed to it."""
    received: list[dict[str, Any]] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            received.append(json.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            del args

    http = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{http.server_port}/hook?token=s3cr3t-in-url", received
    finally:
        http.shutdown()
        http.server_close()


def test_the_answer_is_posted_to_the_webhook_once_the_turn_ends(
    make_app: AppFactory, webhook: tuple[str, list[dict[str, Any]]]
) -> None:
    url, received = webhook
    root = make_app(
        {"agent/schedules/digest.md": md_schedule(cron="0 0 1 1 *", webhook_url_env="DIGEST_URL")}
    )
    server = InProcessServer(app_root=root, env={"DIGEST_URL": url}).start()
    try:
        assert server.post("/schedules/digest/run").status_code == 202
        (body,) = wait_until(lambda: received)
        (run,) = scheduled_sessions(server)
    finally:
        log = server.stop()
    assert body["schedule"] == "digest"
    assert body["status"] == "completed"
    assert body["sessionId"] == run["session_id"]
    assert body["turnId"] == "turn_0"
    assert body["text"]  # what the offline model answered
    assert "s3cr3t-in-url" not in log


def test_a_named_session_takes_every_run_as_its_next_turn(make_app: AppFactory) -> None:
    root = make_app({"agent/schedules/daily.md": md_schedule(cron="0 0 1 1 *", session="daily")})
    server = InProcessServer(app_root=root).start()
    try:
        for _ in range(2):
            assert server.post("/schedules/daily/run").status_code == 202
        session = wait_until(lambda: _sessions(server))[0]["sessionId"]
        assert wait_until(lambda: server.get(f"/session/{session}").json()["turns"] == 2)
        assert [row["sessionId"] for row in _sessions(server)] == [session]
    finally:
        server.stop()


def _sessions(server: InProcessServer) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = server.get("/sessions").json()["sessions"]
    return rows


def test_a_scheduled_turn_parks_on_its_approval_and_delivers_once_answered(
    make_app: AppFactory, webhook: tuple[str, list[dict[str, Any]]]
) -> None:
    url, received = webhook
    root = scripted_app(make_app, [call("ship", item="anvil"), say("shipped it")], tools=("ship",))
    (root / "agent/schedules").mkdir()
    (root / "agent/schedules/shipping.md").write_text(
        md_schedule(cron="0 0 1 1 *", webhook_url_env="SHIP_URL"), encoding="utf-8"
    )
    server = InProcessServer(app_root=root, env={"SHIP_URL": url}).start()
    try:
        assert server.post("/schedules/shipping/run").status_code == 202
        (run,) = wait_until(lambda: scheduled_sessions(server))
        parked = server.wait_for(run["session_id"], count("turn.waiting"))
        assert received == []  # parked as any session's turn: nothing to deliver yet
        [request] = next(e for e in parked if e["type"] == "input.requested")["data"]["requests"]
        server.answer(run["session_id"], request["request_id"], "approve")
        (body,) = wait_until(lambda: received)
    finally:
        server.stop()
    assert (body["status"], body["text"]) == ("completed", "shipped it")
    assert (root / "shipped.log").read_text() == "anvil\n"
