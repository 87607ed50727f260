"""The slack channel's delivery windows: a thread keeps its session past the idempotency
window, an answer Slack took but eve never heard is not posted twice, and a try that met
Slack's trouble is tried again, each against the loopback Slack."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from eve.channels.declaration import ChannelDeclaration
from eve.channels.kinds.slack import channel_principal, thread_key
from eve.channels.sessions import ChannelSessions
from eve.channels.slack_delivery import Courier, Thread
from eve.sessions.tables import conversation_keys, idempotency_keys
from tests.channels.agent_app import TEA, write_app
from tests.channels.slack.fake_slack import BOT_TOKEN, FakeSlack
from tests.channels.test_slack import SECRET, mention, session_count, wait_for_replies
from tests.sessions.inprocess import InProcessServer

ENV = {"SLACK_SIGNING_SECRET": SECRET, "SLACK_BOT_TOKEN": BOT_TOKEN}
WEEK = 7 * 24 * 3600.0


@pytest.fixture(scope="module")
def slack() -> Iterator[FakeSlack]:
    running = FakeSlack().start()
    yield running
    running.stop()


def serve(root: Path, slack: FakeSlack) -> InProcessServer:
    team = ChannelDeclaration(
        name="team", kind="slack", path="/channels/team", options={"api_url": slack.api_url}
    )
    return InProcessServer(root, env=ENV, channels=[team]).start()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, slack: FakeSlack) -> Iterator[InProcessServer]:
    running = serve(write_app(tmp_path_factory.mktemp("slack-once")), slack)
    yield running
    running.stop()


def store_engine(server: InProcessServer) -> sa.Engine:
    assert server.http is not None
    engine: sa.Engine = server.http.app.state.service.store.engine  # type: ignore[attr-defined]
    return engine


def session_of(reply: dict[str, object]) -> str:
    metadata = reply["metadata"]
    assert isinstance(metadata, dict)
    return str(metadata["event_payload"]["session"])


def test_a_thread_a_week_old_reaches_its_session(server: InProcessServer, slack: FakeSlack) -> None:
    thread, _ = mention(server, slack, "what is tea?")
    session_id = session_of(wait_for_replies(slack, thread, 1)[0])
    before = session_count(server)
    with store_engine(server).begin() as c:
        # as an eve from before eve_conversation_keys left it: only the Idempotency-Key
        c.execute(conversation_keys.delete())
    mention(server, slack, "ship it", thread=thread)  # carried over while the key is kept
    assert session_of(wait_for_replies(slack, thread, 2)[-1]) == session_id  # asks approval
    with store_engine(server).begin() as c:
        # a week goes by: the key that opened the thread's session expires
        c.execute(idempotency_keys.update().values(created_at=idempotency_keys.c.created_at - WEEK))
        c.execute(conversation_keys.update().values(touched_at=time.time() - WEEK))
    mention(server, slack, "what is tea?", thread=thread)
    # the thread's session still waits on its approval, so the message is not a turn; a
    # new session would have been opened (and answered it)
    assert slack.ephemeral[-1]["text"] == "The agent waits on an answer: use the buttons above."
    assert session_count(server) == before
    with store_engine(server).connect() as c:
        touched = c.execute(sa.select(conversation_keys.c.touched_at)).scalar_one()
    assert time.time() - touched < 3600  # it spoke again: a restart catches up on it


def test_a_reply_whose_answer_was_lost_is_not_posted_again(
    server: InProcessServer, slack: FakeSlack
) -> None:
    slack.lose_answer_next = 1  # Slack takes the post; its answer never reaches eve
    thread, _ = mention(server, slack, "what is tea?")
    [reply] = wait_for_replies(slack, thread, 1)
    assert reply["text"] == TEA
    # the delivery tries again, reads the thread back and finds the reply there: a second
    # post would show here before the next mention's reply does
    slack.fail_next = 1  # and Slack's own trouble on the next reply: tried again too
    mention(server, slack, "ship it", thread=thread)
    first, second = wait_for_replies(slack, thread, 2)
    assert (first["ts"], second["text"].split(":")[0]) == (reply["ts"], "Approval needed")
    assert len(slack.bot_replies("C1", thread)) == 2


def test_two_workers_delivering_one_thread_post_its_reply_once(
    server: InProcessServer, slack: FakeSlack
) -> None:
    thread, _ = mention(server, slack, "what is tea?")
    [reply] = wait_for_replies(slack, thread, 1)
    slack.messages["C1"].remove(next(m for m in slack.messages["C1"] if m["ts"] == reply["ts"]))
    assert server.http is not None
    service = server.http.app.state.service  # type: ignore[attr-defined]
    principal = channel_principal("team")

    def courier() -> Courier:  # as each worker's slack channel makes its own
        return Courier(
            api_url=slack.api_url,
            token_env="SLACK_BOT_TOKEN",
            sessions=lambda: ChannelSessions(service, principal),
            key_of=lambda t: thread_key("team", t.team, t.channel, t.ts),
        )

    at = Thread(team="T1", channel="C1", ts=thread, session_id=session_of(reply))

    async def both() -> None:
        await asyncio.gather(courier().deliver(at), courier().deliver(at))

    # both read the thread back before either posts, unless one waits for the other
    slack.replies_barrier = threading.Barrier(2)
    try:
        asyncio.run(both())
    finally:
        slack.replies_barrier = None
    assert [r["text"] for r in slack.bot_replies("C1", thread)] == [TEA]
