"""Compaction in durable sessions: asked for over HTTP and the client, by size across turns,
and across a SIGKILL (the summary is written once)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eve.client import EveClient
from eve.events import SessionCompacted
from tests.conftest import AppFactory, wait_for_file
from tests.sessions.apps import call, say
from tests.sessions.harness import Event, Server, count, script, types
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_crash_recovery import GATED_SLOW

WORDS = "lorem ipsum dolor sit amet " * 20


def _app(
    make_app: AppFactory,
    responses: list[dict[str, Any]],
    *,
    compaction: dict[str, Any] | None = None,
    window: int = 4_000,
    tools: dict[str, str] | None = None,
) -> Path:
    setting = f"compaction={compaction!r}, " if compaction is not None else ""
    files = {
        "agent/agent.py": f"""
            from eve import define_agent
            default = define_agent(
                model="offline/script:script.json",
                {setting}model_context_window_tokens={window},
                limits={{"max_turns": 5}},
            )
        """,
        "agent/instructions.md": "Follow the script.\n",
        **(tools or {}),
    }
    root = make_app(files, minimal=False)
    script(root, responses)
    return root


def _compacted(events: list[Event]) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == "session.compacted"]


def test_a_compaction_asked_for_over_http_folds_the_history_and_the_session_goes_on(
    make_app: AppFactory,
) -> None:
    root = _app(make_app, [say(f"reply {n} " + WORDS) for n in range(5)])
    server = InProcessServer(root).start()
    try:
        session = server.create("message 0 " + WORDS)
        for n in (1, 2):
            server.send(session, f"message {n} " + WORDS)
        server.wait_for(session, count("session.waiting", 3))
        response = server.post(f"/session/{session}/compact")
        assert (response.status_code, response.json()["status"]) == (200, "compacting")
        server.wait_for(session, lambda events: bool(_compacted(events)))
        server.send(session, "message 3")
        events = server.wait_for(session, count("session.waiting", 4))
    finally:
        server.stop()
    [compacted] = _compacted(events)
    assert compacted["reason"] == "requested" and compacted["messages_folded"] > 0
    assert compacted["tokens_after"] < compacted["tokens_before"]
    assert compacted["model"] == "offline/script:script.json"
    assert "turn_id" not in compacted
    # the script goes on where it was: the summary counts the responses it folded
    replies = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert [r.split(" ")[1] for r in replies] == ["0", "1", "2", "3"]
    compacted_at = types(events).index("session.compacted")
    assert types(events)[compacted_at + 1 :].count("turn.started") == 1


def test_the_client_asks_for_a_compaction_and_an_empty_session_has_nothing_to_fold(
    make_app: AppFactory,
) -> None:
    root = _app(make_app, [say("only reply")])
    server = InProcessServer(root).start()
    try:
        with EveClient(server.url, transport=server.transport()) as client:
            session = client.create().session_id
            accepted = client.compact(session)
            assert accepted.status == "compacting"
            ran = next(
                e for e in client.stream(session, follow=True) if isinstance(e, SessionCompacted)
            )
    finally:
        server.stop()
    assert ran.data.messages_folded == 0 and ran.data.reason == "requested"


def test_long_turns_compact_by_size_and_the_requests_stay_under_the_threshold(
    make_app: AppFactory,
) -> None:
    compaction = {"threshold_percent": 50}
    root = _app(make_app, [say(f"reply {n} " + WORDS) for n in range(12)], compaction=compaction)
    server = InProcessServer(root).start()
    try:
        session = server.create("message 0 " + WORDS)
        for n in range(1, 12):
            server.send(session, f"message {n} " + WORDS)
        events = server.wait_for(session, count("session.waiting", 12))
    finally:
        server.stop()
    compacted = _compacted(events)
    assert compacted and all(c["reason"] == "threshold" for c in compacted)
    assert all(c["tokens_after"] < 2_000 <= c["tokens_before"] for c in compacted)
    replies = [
        e["data"]["message"].split(" ")[1] for e in events if e["type"] == "message.completed"
    ]
    assert replies == [str(n) for n in range(12)]


def test_a_sigkill_after_a_compaction_does_not_write_the_summary_again(
    make_app: AppFactory, tmp_path: Path
) -> None:
    """The turn compacts before its first request, then parks in a slow tool; the server is
    killed there and restarted: the recovered turn replays the compaction from its record."""
    responses = [say(f"reply {n} " + WORDS) for n in range(3)]
    responses += [call("slow"), say("done")]
    root = _app(
        make_app,
        responses,
        compaction={"threshold_percent": 50},
        window=1_000,
        tools={"agent/tools/slow.py": GATED_SLOW},
    )
    server = Server(root).start()
    try:
        session = server.create("message 0 " + WORDS)
        for n in (1, 2):
            server.send(session, f"message {n} " + WORDS)
        server.wait_for(session, count("session.waiting", 3))
        server.send(session, "message 3 " + WORDS)
        wait_for_file(root / "slow.started")
        # the log's writer flushes in batches: the compaction, recorded before the tool ran,
        # reaches the log soon after, and before the kill
        server.wait_for(session, lambda events: len(_of_turn_3(events)) >= 1)
        assert len(_of_turn_3(server.events(session))) == 1
        server.kill()
        (root / "slow.release").write_text("go")
        server.restart()
        events = server.wait_for(session, count("session.waiting", 4))
    finally:
        server.stop()
    # one summary for the fourth turn, though its body ran twice
    [compacted] = _of_turn_3(events)
    assert compacted["step_index"] == 0 and "attempt" not in compacted
    assert [e["data"]["message"] for e in events if e["type"] == "message.completed"][-1] == "done"
    assert len((root / "slow.log").read_text().splitlines()) == 2


def _of_turn_3(events: list[Event]) -> list[dict[str, Any]]:
    return [c for c in _compacted(events) if c.get("turn_id") == "turn_3"]
