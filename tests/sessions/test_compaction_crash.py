"""SIGKILL in the middle of a compaction: the recovered workflow writes the summary again,
and the session ends up with it once.

The summarizer is an ``openai/`` model behind a loopback Chat Completions server (the real
SDK over real HTTP): its first answer stalls after one chunk, so the server is killed while
the compaction's step runs; the second answer is whole.
"""

from __future__ import annotations

import time

from tests.conftest import AppFactory
from tests.models.openai_script import chunk, text
from tests.models.sse_server import Reply, ScriptedServer, openai_sse
from tests.sessions.apps import say
from tests.sessions.harness import Server, count
from tests.sessions.test_compaction_http import WORDS, _app, _compacted

KEY = "sk-test-" + "0" * 40
#: the stalled answer holds longer than any wait below, so the kill always comes first
STALL_SECONDS = 20.0


def _stalled() -> Reply:
    whole = openai_sse([text("partial "), text("summary"), chunk(finish="stop")])
    return Reply(headers=whole.headers, chunks=[whole.chunks[0], STALL_SECONDS, *whole.chunks[1:]])


def test_a_sigkill_during_a_requested_compaction_writes_the_summary_once(
    make_app: AppFactory,
) -> None:
    summary = openai_sse([text("the user sent three long messages"), chunk(finish="stop")])
    with ScriptedServer(_stalled(), summary) as summarizer:
        root = _app(
            make_app,
            [say(f"reply {n} " + WORDS) for n in range(4)],
            compaction={"threshold_percent": 80, "model": "openai/gpt-4o"},
        )
        env = {"OPENAI_BASE_URL": f"{summarizer.url}/compat/v1", "OPENAI_API_KEY": KEY}
        server = Server(root, env=env).start()
        try:
            session = server.create("message 0 " + WORDS)
            for n in (1, 2):
                server.send(session, f"message {n} " + WORDS)
            server.wait_for(session, count("session.waiting", 3))
            assert server.post(f"/session/{session}/compact").status_code == 200
            deadline = time.monotonic() + 30
            while not summarizer.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            assert summarizer.requests, "the compaction never asked the summarizer"
            server.kill()
            server.restart()
            server.wait_for(session, lambda events: bool(_compacted(events)))
            server.send(session, "message 3")
            events = server.wait_for(session, count("session.waiting", 4))
        finally:
            server.stop()
    # asked twice (the first answer died with the server), written and logged once
    assert len(summarizer.requests) == 2
    [compacted] = _compacted(events)
    assert compacted["model"] == "openai/gpt-4o" and compacted["reason"] == "requested"
    sent = summarizer.requests[1].body
    assert sent["model"] == "gpt-4o" and "compacting the history" in sent["messages"][0]["content"]
    # the session went on from the summary: the script is where it was
    replies = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert replies[-1].startswith("reply 3")
