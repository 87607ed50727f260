"""A 202 is durable: every accepted message is answered exactly once, in order, while the
database restarts, cuts eve's connections or holds its lock under a client that keeps sending.

The client sends each message with an ``Idempotency-Key`` and sends it again on a 503 or a
dropped connection until it gets a 202, as a client should; the turns those 202s name must
each end in one ``turn.completed``, in turn order, with their messages received once each.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from eve.sessions.settings import SESSIONS_DIR
from tests.conftest import AppFactory
from tests.postgres import PostgresServer
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import Driver, Event, Server, assert_dense, count
from tests.sessions.inprocess import InProcessServer

MESSAGES = 7
#: a turn's writes wait out the fault (db_retry.py); the sweep runs with every heartbeat
FAST = {"EVE_WORKER_TIMEOUT": "1", "EVE_SQLITE_BUSY_TIMEOUT": "0.3"}


def accepted_turn(server: Driver, path: str, body: dict[str, str], key: str) -> str:
    """POST until a 202 (a 503 or a cut connection is retried with the same key); its turn."""
    headers = {**server.headers(), "Idempotency-Key": key}
    deadline = time.monotonic() + 60
    while True:
        try:
            response: httpx.Response | None = server.post(path, body, headers=headers)
        except httpx.HTTPError:
            response = None
        if response is not None and response.status_code == 202:
            turn: str = response.json()["turnId"]
            return turn
        assert response is None or response.status_code == 503, response.text
        assert time.monotonic() < deadline, "never accepted"
        time.sleep(0.05)


class Client(threading.Thread):
    """Creates a session and sends ``MESSAGES`` messages in it, one after another."""

    def __init__(self, server: Driver) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.session = ""
        #: ``(turn id, message)`` of each 202, in the order they came
        self.accepted: list[tuple[str, str]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            body = {"message": "message 0"}
            response = self.server.post("/session", body, headers=self.server.headers())
            assert response.status_code == 202, response.text
            self.session = response.json()["sessionId"]
            self.accepted.append((response.json()["turnId"], "message 0"))
            for n in range(1, MESSAGES):
                text = f"message {n}"
                path = f"/session/{self.session}"
                turn = accepted_turn(self.server, path, {"message": text}, key=f"m{n}")
                self.accepted.append((turn, text))
                time.sleep(0.1)
        except BaseException as error:
            self.error = error

    def wait_accepted(self, n: int) -> None:
        deadline = time.monotonic() + 60
        while len(self.accepted) < n and self.is_alive():
            assert time.monotonic() < deadline, f"only {len(self.accepted)} accepted"
            time.sleep(0.02)


def drive(server: Driver, faults: list[Callable[[], object]]) -> tuple[Client, list[Event]]:
    """Send while ``faults`` strike, one after each accepted message; every answer."""
    client = Client(server)
    client.start()
    for n, fault in enumerate(faults, start=1):
        client.wait_accepted(n)
        fault()
    client.join(120)
    assert client.error is None, client.error
    assert len(client.accepted) == MESSAGES
    return client, server.wait_for(client.session, count("session.waiting", MESSAGES), 90)


def assert_answered_once_in_order(client: Client, events: list[Event]) -> None:
    assert_dense(events)
    turns = [turn for turn, _ in client.accepted]
    assert turns == [f"turn_{n}" for n in range(MESSAGES)], turns
    completed = [e["data"]["turn_id"] for e in events if e["type"] == "turn.completed"]
    assert completed == turns  # one each, none missing or doubled, in order
    received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
    assert received == [text for _, text in client.accepted]
    assert not [e for e in events if e["type"] == "turn.failed"]


def app(make_app: AppFactory) -> Path:
    return scripted_app(
        make_app, [say(f"answer {n}") for n in range(MESSAGES)], limits={"max_turns": 5}
    )


def test_postgres_restarts_and_killed_connections_lose_no_accepted_turn(
    make_app: AppFactory, restartable_postgres: PostgresServer
) -> None:
    pg = restartable_postgres
    url = pg.database()
    server = Server(app(make_app), env={"EVE_DATABASE_URL": url, **FAST})
    faults = [
        pg.restart,  # fast: down and up again at once
        lambda: pg.terminate_backends(url),
        lambda: pg.restart(pause=1.5),  # slow: no server for a while
        lambda: pg.terminate_backends(url),
        pg.restart,
    ]
    server.start()
    try:
        client, events = drive(server, faults)
    except BaseException:
        print(server.stop())  # the server's side of it, in the failure's report
        raise
    log = server.stop()
    assert_answered_once_in_order(client, events)
    assert "did not stop" not in log, log


def test_a_held_sqlite_lock_loses_no_accepted_turn(make_app: AppFactory) -> None:
    root = app(make_app)
    server = InProcessServer(root, env=FAST).start()
    holder = sqlite3.connect(root / SESSIONS_DIR / "eve.sqlite", isolation_level=None)

    def hold_lock() -> None:
        # longer than the busy timeout: requests answer 503, running turns wait it out
        holder.execute("BEGIN IMMEDIATE")
        time.sleep(1.0)
        holder.execute("ROLLBACK")

    try:
        client, events = drive(server, [hold_lock, hold_lock, hold_lock])
    finally:
        holder.close()
        server.stop()
    assert_answered_once_in_order(client, events)
