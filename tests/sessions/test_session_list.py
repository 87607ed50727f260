"""``GET /eve/v1/sessions``: newest first, paged by a cursor that new sessions do not shift,
each session with what it is doing, its last activity, turns and usage; through both clients."""

from __future__ import annotations

import asyncio

import pytest

from eve._usage import TokenUsage
from eve.client import APIError, AsyncEveClient, EveClient, SessionListEntry
from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer


def test_sessions_are_listed_newest_first_with_what_each_is_doing(make_app: AppFactory) -> None:
    # every session replays the script: the first asks to ship (a person approves), then answers
    root = scripted_app(make_app, [call("ship", item="box"), say("shipped")], tools=("ship",))
    server = InProcessServer(root).start()
    try:
        with EveClient(server.url, transport=server.transport()) as client:
            fresh = server.create()
            done = server.create("ship a box")
            parked = server.wait_for(done, count("input.requested"))
            asked = next(e for e in parked if e["type"] == "input.requested")
            request_id = asked["data"]["requests"][0]["request_id"]
            server.answer(done, request_id, "approve")
            server.wait_for(done, count("session.waiting"))
            waiting = server.create("ship another")
            server.wait_for(waiting, count("turn.waiting"))
            first = client.sessions(limit=2)
            assert first.next_cursor is not None
            # a session created while paging comes before the cursor, not on the next page
            newer = server.create()
            second = client.sessions(limit=2, cursor=first.next_cursor)
            everything = client.sessions()
            with pytest.raises(APIError) as bad_cursor:
                client.sessions(cursor="not-a-cursor")
            with pytest.raises(APIError) as bad_limit:
                client.sessions(limit=0)
    finally:
        server.stop()
    assert [s.session_id for s in first.sessions] == [waiting, done]
    assert [s.session_id for s in second.sessions] == [fresh]
    assert second.next_cursor is None
    assert [s.session_id for s in everything.sessions] == [newer, waiting, done, fresh]
    by_id: dict[str, SessionListEntry] = {s.session_id: s for s in everything.sessions}
    assert [by_id[s].activity for s in (newer, waiting, done, fresh)] == [
        "new",
        "waiting",
        "completed",
        "new",
    ]
    assert all(s.status == "active" for s in everything.sessions)
    assert (by_id[done].turns, by_id[fresh].turns) == (1, 0)
    assert by_id[done].usage.input_tokens > 0 and by_id[fresh].usage == TokenUsage()
    assert by_id[done].last_activity_at > by_id[done].created_at
    assert by_id[fresh].last_activity_at >= by_id[fresh].created_at
    assert (bad_cursor.value.status, bad_cursor.value.code) == (400, "invalid_list_query")
    assert (bad_limit.value.status, bad_limit.value.code) == (400, "invalid_list_query")


def test_the_async_client_lists_sessions_and_a_failed_turn_says_so(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("hi")])
    server = InProcessServer(root).start()

    async def listed() -> list[SessionListEntry]:
        async with AsyncEveClient(server.url, transport=server.async_transport()) as client:
            page = await client.sessions(limit=5)
            return page.sessions

    try:
        failed = server.create("hello")
        server.wait_for(failed, count("session.waiting"))
        # the script has one answer: the second turn runs past it and fails
        server.send(failed, "again")
        server.wait_for(failed, count("turn.failed"))
        sessions = asyncio.run(listed())
        raw = server.get("/sessions?limit=1")
    finally:
        server.stop()
    assert [(s.session_id, s.activity, s.turns) for s in sessions] == [(failed, "failed", 1)]
    assert raw.status_code == 200 and raw.json()["ok"] is True
    assert raw.json()["nextCursor"] is None
