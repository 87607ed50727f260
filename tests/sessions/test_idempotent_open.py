"""A replayed create or message returns the first answer and emits nothing again.

Ten retries of one request at once, a retry after the session ended, and a retry of a
create whose first request failed after it made the session: one ``session.started``,
its hooks once, the first turn once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from eve.sessions import opening
from eve.sessions.service import SessionService
from eve.sessions.store import SessionStore
from eve.sessions.tables import sessions
from tests.conftest import AppFactory
from tests.sessions.apps import SCRIPTED_AGENT, call, say
from tests.sessions.harness import Server, count, script, types
from tests.sessions.inprocess import InProcessServer

#: a session.started hook that counts its runs in a file, sets state the first turn reads,
#: and holds the open while the file "hold-open" exists
FILES = {
    "agent/instructions.md": "Follow the script.\n",
    "agent/lib/greeting.py": """
        from eve.context import define_state

        greeting = define_state("greeting", "")
    """,
    "agent/hooks/opened.py": """
        import asyncio
        from pathlib import Path
        from agent.lib.greeting import greeting
        from eve.hooks import define_hook

        async def on_started(event):
            with Path("started.log").open("a") as log:
                log.write(event.data.session_id + "\\n")
            greeting.update(lambda _: "set by the hook")
            Path("hook.running").write_text("yes")
            while Path("hold-open").exists():
                await asyncio.sleep(0.02)

        default = define_hook(events={"session.started": on_started})
    """,
    "agent/tools/read_greeting.py": """
        from agent.lib.greeting import greeting
        from eve.tools import tool

        @tool
        def read_greeting() -> str:
            '''The greeting the session.started hook set.'''
            return greeting.get()
    """,
}


def hooked_app(make_app: AppFactory, limits: dict[str, Any] | None = None) -> Path:
    agent = SCRIPTED_AGENT.replace("{limits}", repr(limits or {"max_turns": 5}))
    root = make_app({**FILES, "agent/agent.py": agent}, minimal=False)
    script(root, [call("read_greeting"), say("done"), say("two"), say("three")])
    return root


@pytest.fixture
def server(make_app: AppFactory) -> Iterator[InProcessServer]:
    running = InProcessServer(hooked_app(make_app)).start()
    try:
        yield running
    finally:
        running.stop()


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def at_once(
    server: InProcessServer, path: str, body: dict[str, Any], key: str, n: int = 10
) -> list[httpx.Response]:
    """``n`` copies of one keyed POST, sent concurrently (``asyncio.gather``)."""

    async def send_all() -> list[httpx.Response]:
        transport = server.async_transport()
        async with httpx.AsyncClient(transport=transport, base_url=server.url) as client:
            headers = {**server.headers(), **keyed(key)}
            posts = [client.post(path, json=body, headers=headers) for _ in range(n)]
            return list(await asyncio.gather(*posts))

    return asyncio.run(send_all())


def hook_runs(server: InProcessServer | Server, session: str) -> int:
    log = server.app_root / "started.log"
    return log.read_text().split().count(session) if log.exists() else 0


def greetings(events: list[dict[str, Any]]) -> list[object]:
    return [e["data"]["output"] for e in events if e["type"] == "action.result"]


def assert_opened_once(server: InProcessServer | Server, session: str) -> list[dict[str, Any]]:
    """One session.started, its hook once, the first turn once and with the hook's state."""
    events = server.wait_for(session, count("session.waiting"))
    assert types(events).count("session.started") == 1
    assert types(events).count("turn.started") == 1
    assert hook_runs(server, session) == 1
    assert greetings(events) == ["set by the hook"]
    return events


def test_ten_creates_at_once_with_one_key_open_one_session_once(
    server: InProcessServer,
) -> None:
    answers = at_once(server, "/session", {"message": "hi"}, "create-at-once")
    assert {a.status_code for a in answers} == {202}
    assert len({a.json()["sessionId"] for a in answers}) == 1
    assert {a.json()["turnId"] for a in answers} == {"turn_0"}
    assert sum(a.headers.get("idempotent-replayed") == "true" for a in answers) == 9
    assert_opened_once(server, answers[0].json()["sessionId"])


def test_ten_messages_at_once_with_one_key_run_one_turn(server: InProcessServer) -> None:
    session = server.create()
    answers = at_once(server, f"/session/{session}", {"message": "m"}, "send-at-once")
    assert {(a.status_code, a.json()["turnId"]) for a in answers} == {(202, "turn_0")}
    events = server.wait_for(session, count("session.waiting"))
    assert types(events).count("message.received") == 1
    assert types(events).count("turn.started") == 1
    assert hook_runs(server, session) == 1


def test_a_replay_after_the_session_ended_returns_the_first_answer(
    make_app: AppFactory,
) -> None:
    root = hooked_app(make_app, limits={"max_turns": 5, "session_timeout_seconds": 0.3})
    server = InProcessServer(root).start()
    try:
        created = server.post("/session", {"message": "hi"}, headers=keyed("c"))
        session = created.json()["sessionId"]
        sent = server.post(f"/session/{session}", {"message": "m"}, headers=keyed("s"))
        ended = server.wait_for(session, count("session.completed"))
        again = server.post("/session", {"message": "hi"}, headers=keyed("c"))
        resent = server.post(f"/session/{session}", {"message": "m"}, headers=keyed("s"))
        assert (again.status_code, again.json()) == (202, created.json())
        assert (resent.status_code, resent.json()) == (202, sent.json())
        assert server.events(session) == ended  # nothing emitted again
        assert hook_runs(server, session) == 1
        # the same key with another body is still refused, ended or not
        other = server.post("/session", {"message": "other"}, headers=keyed("c"))
        assert (other.status_code, other.json()["code"]) == (422, "idempotency_key_reused")
    finally:
        server.stop()


class OpenFails(Exception):
    """The simulated failure of a create's first request after it made the session."""


def fail_once(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """``SessionService.<name>`` raises on its first call, as if the request died there."""
    real = getattr(SessionService, name)
    calls = [0]

    async def flaky(self: SessionService, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            raise OpenFails(name)
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(SessionService, name, flaky)


@pytest.mark.parametrize(
    ("failing", "hook_runs_expected"),
    [
        # session.started and the hook's state stored, the first turn not yet queued: the
        # retry queues it and publishes nothing
        ("_watch_idle", 1),
        # the hook ran, nothing of it was stored: the retry runs it again, publishes once
        ("_save_initial_state", 2),
    ],
)
def test_a_retry_finishes_an_open_whose_first_request_failed(
    server: InProcessServer,
    monkeypatch: pytest.MonkeyPatch,
    failing: str,
    hook_runs_expected: int,
) -> None:
    fail_once(monkeypatch, failing)
    first = server.post("/session", {"message": "hi"}, headers=keyed("dies"))
    assert first.status_code == 500
    retry = server.post("/session", {"message": "hi"}, headers=keyed("dies"))
    assert retry.status_code == 202 and retry.headers["idempotent-replayed"] == "true"
    session = retry.json()["sessionId"]
    events = server.wait_for(session, count("session.waiting"))
    assert types(events).count("session.started") == 1
    assert types(events).count("turn.started") == 1
    assert greetings(events) == ["set by the hook"]
    assert hook_runs(server, session) == hook_runs_expected


def test_a_retry_takes_over_the_open_of_a_request_whose_process_died(
    server: InProcessServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead process neither finishes its open nor lets go of it: its lease runs out."""
    monkeypatch.setattr(opening, "LEASE_SECONDS", 0.3)
    monkeypatch.setattr(opening, "_release", lambda *args: None)  # died: never lets go
    fail_once(monkeypatch, "_watch_idle")
    assert server.post("/session", {"message": "hi"}, headers=keyed("k")).status_code == 500
    retry = server.post("/session", {"message": "hi"}, headers=keyed("k"))
    assert retry.status_code == 202
    assert_opened_once(server, retry.json()["sessionId"])


def test_a_replay_waits_for_the_open_in_progress_then_gives_up(
    server: InProcessServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the first request is still opening (its hook runs), a replay waits for it, up
    to ``WAIT_SECONDS``; then it is told to retry, and nothing was done twice."""
    monkeypatch.setattr(opening, "WAIT_SECONDS", 0.3)
    hold = server.app_root / "hold-open"
    hold.write_text("until the replay gave up")

    async def race() -> tuple[httpx.Response, httpx.Response]:
        transport = server.async_transport()
        async with httpx.AsyncClient(transport=transport, base_url=server.url) as client:
            headers = {**server.headers(), **keyed("slow")}
            first = asyncio.ensure_future(
                client.post("/session", json={"message": "hi"}, headers=headers)
            )
            while not (server.app_root / "hook.running").exists():
                await asyncio.sleep(0.01)
            replay = await client.post("/session", json={"message": "hi"}, headers=headers)
            hold.unlink()
            return await first, replay

    first, replay = asyncio.run(race())
    assert first.status_code == 202
    assert (replay.status_code, replay.json()["code"]) == (409, "idempotency_key_in_progress")
    again = server.post("/session", {"message": "hi"}, headers=keyed("slow"))
    assert again.json() == first.json()
    assert_opened_once(server, first.json()["sessionId"])


def test_ten_creates_at_once_across_two_workers_open_one_session_once(
    make_app: AppFactory, postgres_url: str
) -> None:
    """Two ``eve serve`` processes on one PostgreSQL database get the retries between them."""
    root = hooked_app(make_app)
    env = {"EVE_DATABASE_URL": postgres_url}
    a = Server(root, env={**env, "EVE_WORKER_ID": "idem-a"}).start()
    try:
        b = Server(root, env={**env, "EVE_WORKER_ID": "idem-b"}).start()
        try:
            with ThreadPoolExecutor(10) as pool:
                answers = list(
                    pool.map(
                        lambda n: (a, b)[n % 2].post(
                            "/session", {"message": "hi"}, headers=keyed("across")
                        ),
                        range(10),
                    )
                )
            assert {a.status_code for a in answers} == {202}
            assert len({a.json()["sessionId"] for a in answers}) == 1
            assert_opened_once(b, answers[0].json()["sessionId"])
        finally:
            b.stop()
    finally:
        a.stop()


async def test_a_session_an_earlier_eve_made_counts_as_open(tmp_path: Path) -> None:
    """A row from before open stages (its stage NULL) was opened by that eve: a replay of
    its create opens nothing, while a row still opening is opened by whoever claims it."""
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    opened: list[str] = []

    def work(session_id: str) -> opening.Work:
        async def run() -> None:
            opened.append(session_id)

        return run

    try:
        store.create_session("ses_old")  # as an earlier eve inserted it
        await opening.open_session(store, "ses_old", work("ses_old"), key="k")
        store.create_session(
            "ses_new", also=lambda c: opening.claim_new(c, "ses_new", opening.new_owner())
        )
        # its creator let go without opening it (its open failed): a replay takes over
        store.run(lambda c: c.execute(sessions.update().values(open_owner=None)))
        for _ in range(2):
            await opening.open_session(store, "ses_new", work("ses_new"), key="k")
    finally:
        store.close()
    assert opened == ["ses_new"]
