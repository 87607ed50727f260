"""``GET /eve/v1/session/{id}`` through the client: status, turns, tokens, cost, limits and
what is left, kept across a server restart (they live in the session's checkpoint)."""

from __future__ import annotations

import asyncio
import json
import time
from decimal import Decimal
from typing import Any

import pytest

from eve._usage import TokenUsage
from eve.client import APIError, AsyncEveClient, EveClient, SessionLimits, SessionSummary
from eve.costs import Cost, Spend
from eve.events import StepCompleted, TaskSettled, TurnCompleted
from eve.sessions.checkpoint import decode_checkpoint, encode_checkpoint
from eve.sessions.store import SessionStore
from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Server
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_tasks import RESEARCHER
from tests.sessions.test_tasks import app as durable_app

LIMITS = {"max_turns": 5, "max_input_tokens_per_session": 100_000, "session_timeout_seconds": 3600}


def test_the_summary_adds_up_the_turns_and_says_what_is_left(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("first reply"), say("second reply")], limits=LIMITS)
    server = InProcessServer(root).start()
    try:
        with EveClient(server.url, transport=server.transport()) as client:
            session = client.create().session_id
            empty = client.session(session)
            turns = []
            for message in ("hello", "again"):
                accepted = client.send(session, message)
                events = list(client.turn_events(session, accepted.turn_id))
                turns.append(next(e for e in events if isinstance(e, TurnCompleted)).data)
            summary = client.session(session)
            with pytest.raises(APIError) as missing:
                client.session("ses_nope")
    finally:
        server.stop()
    assert (empty.status, empty.turns, empty.usage, empty.cost) == (
        "active",
        0,
        TokenUsage(),
        Cost(),
    )
    assert summary.status == "active" and summary.ended_reason is None
    assert summary.turns == 2
    assert summary.usage == turns[0].usage + turns[1].usage
    assert summary.usage.input_tokens > 0
    # the offline model is free: a known $0, the same the last turn.completed reported
    assert summary.cost == Cost(usd=Decimal(0))
    assert turns[1].session is not None and turns[1].session.usage == summary.usage
    assert summary.limits == SessionLimits(
        max_input_tokens_per_session=100_000, session_timeout_seconds=3600
    )
    left = summary.left
    assert left.max_input_tokens_per_session == 100_000 - summary.usage.input_tokens
    assert left.max_output_tokens_per_session is None and left.max_cost_usd_per_session is None
    assert left.session_timeout_seconds is not None and 0 < left.session_timeout_seconds < 3600
    assert missing.value.status == 404 and missing.value.code == "session_not_found"


def test_the_async_client_reads_the_same_summary(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("only reply")])
    server = InProcessServer(root).start()

    async def converse() -> SessionSummary:
        async with AsyncEveClient(server.url, transport=server.async_transport()) as client:
            accepted = await client.create("hello")
            async for _ in client.turn_events(accepted.session_id, accepted.turn_id):
                pass
            return await client.session(accepted.session_id)

    try:
        summary = asyncio.run(converse())
    finally:
        server.stop()
    assert summary.turns == 1 and summary.usage.output_tokens > 0
    assert summary.limits == SessionLimits() == summary.left  # no session limits set


def test_the_totals_survive_a_server_restart(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("first reply"), say("second reply")])
    server = Server(root).start()
    try:
        client = EveClient(server.url)
        accepted = client.create("hello")
        list(client.turn_events(accepted.session_id, accepted.turn_id))
        before = client.session(accepted.session_id)
        server.kill()
        server.restart()
        after = client.session(accepted.session_id)
        second = client.send(accepted.session_id, "again")
        events = list(client.turn_events(accepted.session_id, second.turn_id))
        last = client.session(accepted.session_id)
        client.close()
    finally:
        server.stop()
    assert before.turns == 1 and after == before
    completed = next(e for e in events if isinstance(e, TurnCompleted)).data
    assert last.turns == 2 and last.usage == before.usage + completed.usage
    assert completed.session is not None and completed.session.usage == last.usage


def test_a_durable_subagents_tokens_count_toward_the_callers_turn_and_session(
    make_app: AppFactory,
) -> None:
    root = durable_app(
        make_app,
        RESEARCHER,
        {
            "__root__": [call("researcher", message="look it up"), say("it costs 3")],
            "researcher": [say("found: 3")],
        },
    )
    server = InProcessServer(root).start()
    try:
        with EveClient(server.url, transport=server.transport()) as client:
            session = client.create("how much?").session_id
            events = list(client.stream(session, until=frozenset({"session.waiting"})))
            summary = client.session(session)
    finally:
        server.stop()
    [child_turn] = [e.data for e in events if isinstance(e, TurnCompleted) and e.data.parent]
    [turn] = [e.data for e in events if isinstance(e, TurnCompleted) and not e.data.parent]
    [settled] = [e.data for e in events if isinstance(e, TaskSettled)]
    assert settled.spend == Spend(usage=child_turn.usage, cost=child_turn.cost or Cost())
    own = [e.data for e in events if isinstance(e, StepCompleted) and not e.data.parent]
    steps = [s.step.usage for s in own if s.step is not None]
    assert turn.usage == steps[0] + steps[1] == own[-1].usage
    # the step that called the subagent holds its model call and the subagent's whole turn
    assert own[0].step is not None
    assert own[0].step.usage.output_tokens > child_turn.usage.output_tokens > 0
    assert own[0].step.usage.input_tokens > child_turn.usage.input_tokens > 0
    assert summary.usage == turn.usage and summary.turns == 1


def test_a_checkpoint_from_before_spend_keeps_its_token_totals() -> None:
    old = decode_checkpoint('{"messages": [], "turns": 2, "input_tokens": 40, "output_tokens": 9}')
    assert (old.spend.usage.input_tokens, old.spend.usage.output_tokens) == (40, 9)
    written = json.loads(encode_checkpoint(old))  # written back as spend only
    assert "input_tokens" not in written and "output_tokens" not in written
    assert decode_checkpoint(json.dumps(written)).spend == old.spend


def test_a_turns_end_is_in_the_log_only_once_the_summary_counts_it(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``turn.completed`` waits for the turn's checkpoint: a slow save cannot let a client
    that saw the turn end read a summary without it."""
    saved = SessionStore.save_checkpoint

    def slow_save(self: SessionStore, session_id: str, raw: str | None, **kwargs: Any) -> int:
        time.sleep(0.5)  # the turn's end is emitted while this runs
        return saved(self, session_id, raw, **kwargs)

    monkeypatch.setattr(SessionStore, "save_checkpoint", slow_save)
    root = scripted_app(make_app, [say("only reply")])
    server = InProcessServer(root).start()
    try:
        with EveClient(server.url, transport=server.transport()) as client:
            accepted = client.create("hello")
            events = list(client.turn_events(accepted.session_id, accepted.turn_id))
            summary = client.session(accepted.session_id)
    finally:
        server.stop()
    assert events[-1].type == "turn.completed"
    assert summary.turns == 1 and summary.usage.output_tokens > 0
