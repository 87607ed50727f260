"""A schedule's answer delivered to a webhook once its turn ends (signed, tried again when a
real receiver says "not now", given up on by name), and the long-lived session a
``session:`` schedule runs every tick in."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from standardwebhooks.webhooks import Webhook

from eve.schedules import delivery, webhook_tries
from eve.schedules.tick import SCHEDULE_WORKFLOW
from eve.sessions.dbos_data import EveSerializer
from tests.conftest import AppFactory
from tests.schedules.apps import last_run, md_schedule, scheduled_sessions, wait_until
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Server, count
from tests.sessions.inprocess import InProcessServer

SECRET = "whsec_" + base64.b64encode(b"receiver-key-" * 3).decode()


@dataclass
class Receiver:
    """A loopback webhook receiver: its URL, what it was sent, and what it answers."""

    url: str
    #: each POST's headers (lower-cased names) and body, in order
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    #: the status (and Retry-After) of each next POST; 204 once these run out
    answers: list[tuple[int, str | None]] = field(default_factory=list)
    #: when set, the next POST is taken, then its answer waits until the event is set
    hold: threading.Event | None = None

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.received]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    got = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
            if (held := got.hold) is not None:
                got.hold = None
                held.wait(30)
            status, wait = got.answers.pop(0) if got.answers else (204, None)
            self.send_response(status)
            if wait is not None:
                self.send_header("Retry-After", wait)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            del args

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    got.url = f"http://127.0.0.1:{http.server_port}/hook?token=s3cr3t-in-url"
    try:
        yield got
    finally:
        http.shutdown()
        http.server_close()


def test_the_answer_is_posted_to_the_webhook_once_the_turn_ends(
    make_app: AppFactory, receiver: Receiver
) -> None:
    root = make_app(
        {"agent/schedules/digest.md": md_schedule(cron="0 0 1 1 *", webhook_url_env="DIGEST_URL")}
    )
    server = InProcessServer(app_root=root, env={"DIGEST_URL": receiver.url}).start()
    try:
        assert server.post("/schedules/digest/run").status_code == 202
        (body,) = wait_until(receiver.bodies)
        (run,) = scheduled_sessions(server)
    finally:
        log = server.stop()
    assert body["schedule"] == "digest"
    assert body["status"] == "completed"
    assert body["sessionId"] == run["session_id"]
    assert body["turnId"] == "turn_0"
    assert body["text"]  # what the offline model answered
    [(headers, _)] = receiver.received
    assert headers["webhook-id"].startswith("msg_") and headers["webhook-timestamp"].isdigit()
    assert "webhook-signature" not in headers  # the schedule names no secret
    assert "s3cr3t-in-url" not in log


def test_a_receiver_that_says_not_now_gets_the_same_message_again_signed(
    make_app: AppFactory, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delivery, "BACKOFF_SECONDS", (0.25, 0.5))
    receiver.answers = [(500, None), (503, "0"), (429, "0")]
    schedule = md_schedule(
        cron="0 0 1 1 *", webhook_url_env="DIGEST_URL", webhook_secret_env="DIGEST_SECRET"
    )
    root = make_app({"agent/schedules/digest.md": schedule})
    env = {"DIGEST_URL": receiver.url, "DIGEST_SECRET": SECRET}
    server = InProcessServer(app_root=root, env=env).start()
    try:
        assert server.post("/schedules/digest/run").status_code == 202
        wait_until(lambda: len(receiver.received) == 4)
        assert wait_until(lambda: last_run(server) == "SUCCESS")
    finally:
        log = server.stop()
    # one message: every try carries its id, each signed afresh, each verified
    assert len({headers["webhook-id"] for headers, _ in receiver.received}) == 1
    for headers, body in receiver.received:
        assert Webhook(SECRET).verify(body, headers)["status"] == "completed"
    assert log.count("; trying again in 0s") == 2  # the receiver's Retry-After: 0
    assert "try 1 of 6: answered 500: ; trying again in 0.25s" in log  # the backoff
    assert SECRET not in log and "s3cr3t-in-url" not in log


def test_a_receiver_that_never_takes_it_is_given_up_on_by_name(
    make_app: AppFactory, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webhook_tries, "WEBHOOK_ATTEMPTS", 3)
    receiver.answers = [(503, "0")] * 3
    schedule = md_schedule(cron="0 0 1 1 *", webhook_url_env="DIGEST_URL")
    root = make_app({"agent/schedules/digest.md": schedule})
    server = InProcessServer(app_root=root, env={"DIGEST_URL": receiver.url}).start()
    try:
        assert server.post("/schedules/digest/run").status_code == 202
        assert wait_until(lambda: last_run(server) == "ERROR")
        (run,) = scheduled_sessions(server)
    finally:
        log = server.stop()
    [msg_id] = {headers["webhook-id"] for headers, _ in receiver.received}
    assert len(receiver.received) == 3
    assert (
        f"the answer of session {run['session_id']} was not delivered (webhook {msg_id}, "
        "3 tries): WebhookDeliveryGaveUp" in log
    )
    assert "the last answered 503" in log and "s3cr3t-in-url" not in log


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
    make_app: AppFactory, receiver: Receiver
) -> None:
    root = scripted_app(make_app, [call("ship", item="anvil"), say("shipped it")], tools=("ship",))
    (root / "agent/schedules").mkdir()
    (root / "agent/schedules/shipping.md").write_text(
        md_schedule(cron="0 0 1 1 *", webhook_url_env="SHIP_URL"), encoding="utf-8"
    )
    server = InProcessServer(app_root=root, env={"SHIP_URL": receiver.url}).start()
    try:
        assert server.post("/schedules/shipping/run").status_code == 202
        (run,) = wait_until(lambda: scheduled_sessions(server))
        parked = server.wait_for(run["session_id"], count("turn.waiting"))
        assert receiver.received == []  # parked as any session's turn: nothing to deliver yet
        [request] = next(e for e in parked if e["type"] == "input.requested")["data"]["requests"]
        server.answer(run["session_id"], request["request_id"], "approve")
        (body,) = wait_until(receiver.bodies)
    finally:
        server.stop()
    assert (body["status"], body["text"]) == ("completed", "shipped it")
    assert (root / "shipped.log").read_text() == "anvil\n"


def test_a_sender_killed_before_its_answer_sends_the_same_message_again(
    make_app: AppFactory, receiver: Receiver
) -> None:
    # SIGKILL before the answer: the try is not recorded, and runs again
    assert killed_mid_post(make_app, receiver) == "SUCCESS"
    # twice, as one message: a receiver that drops ids it took handles it once
    first, again = receiver.received
    assert first[0]["webhook-id"] == again[0]["webhook-id"]
    assert first[1] == again[1]


def test_a_tick_an_older_eve_recorded_delivering_in_one_step_replays_from_that_record(
    make_app: AppFactory, receiver: Receiver
) -> None:
    # as an eve before ``schedule.webhook`` left it: the POST taken and recorded as its one
    # step, the worker gone before the tick's end; the step is answered from its record
    recorded = killed_mid_post(make_app, receiver, meanwhile=_record_one_step_delivery)
    assert recorded == "SUCCESS"
    assert len(receiver.received) == 1  # delivered once, by the older eve


def killed_mid_post(
    make_app: AppFactory, receiver: Receiver, *, meanwhile: Callable[[Path], None] | None = None
) -> str | None:
    """Run a webhook schedule now, SIGKILL its ``eve serve`` while the receiver holds the
    first POST, do ``meanwhile`` (with the app's root), start it again: the run's status
    once DBOS recovered the tick."""
    receiver.hold = killed = threading.Event()  # taken; the 204 waits
    schedule = md_schedule(cron="0 0 1 1 *", webhook_url_env="DIGEST_URL")
    root = make_app({"agent/schedules/digest.md": schedule})
    server = Server(root, env={"DIGEST_URL": receiver.url}).start()
    try:
        assert server.post("/schedules/digest/run").status_code == 202
        wait_until(lambda: receiver.received)
        server.kill()
        killed.set()
        if meanwhile is not None:
            meanwhile(root)
        server.start()
        wait_until(lambda: last_run(server) in ("SUCCESS", "ERROR"))
        return last_run(server)
    finally:
        server.stop()


def _record_one_step_delivery(root: Path) -> None:
    """Record the running tick's next step as ``schedule.deliver``, done with no value."""
    engine = sa.create_engine(f"sqlite:///{root / '.eve' / 'sessions' / 'dbos.sqlite'}")
    outputs = sa.Table("operation_outputs", sa.MetaData(), autoload_with=engine)
    try:
        with engine.begin() as c:
            [tick] = c.execute(
                sa.text("SELECT workflow_uuid FROM workflow_status WHERE name = :name"),
                {"name": SCHEDULE_WORKFLOW},
            ).scalars()
            last = c.execute(
                sa.select(outputs)
                .where(outputs.c.workflow_uuid == tick)
                .order_by(outputs.c.function_id.desc())
                .limit(1)
            ).one()
            assert last.function_name == "schedule.outcome", last.function_name
            serializer = EveSerializer()
            record = {
                **last._asdict(),
                "function_id": last.function_id + 1,
                "function_name": "schedule.deliver",
                "output": serializer.serialize(None),
                "error": None,
                "serialization": serializer.name(),
            }
            c.execute(sa.insert(outputs).values(**record))
    finally:
        engine.dispose()
