"""A schedule delivered through the ``slack`` channel: its answer a new message in the
conversation it names, that message's thread the run's session, against the loopback Slack."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from eve.channels.declaration import ChannelDeclaration
from eve.errors import ScheduleDeliveryFailed
from eve.manifest import ChannelDelivery, ChannelEntry
from eve.schedules.channel_delivery import deliver_to_channel
from eve.schedules.delivery import RunOutcome
from eve.schedules.tick import RETRY_ENV
from eve.sessions import SessionService
from eve.sessions.tables import conversation_keys, idempotency_keys
from tests.channels.slack.fake_slack import BOT_TOKEN, FakeSlack
from tests.channels.test_slack import SECRET, mention, wait_for_replies
from tests.conftest import AppFactory
from tests.schedules.apps import last_run, md_schedule, scheduled_sessions, wait_until
from tests.sessions.harness import Server
from tests.sessions.inprocess import InProcessServer

ENV = {
    "SLACK_SIGNING_SECRET": SECRET,
    "SLACK_BOT_TOKEN": BOT_TOKEN,
    # a delivery's tries a twentieth of a second apart, not DBOS's 1 s, 2 s and 4 s: what
    # is tried, and how often, is the same
    RETRY_ENV: "0.05",
}


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    running = FakeSlack(channels={"C1"}).start()
    yield running
    running.stop()


def slack_app(make_app: AppFactory, slack: FakeSlack, *, to: str = "C1") -> Path:
    channel = f'from eve.channels import slack\n\nchannel = slack(api_url="{slack.api_url}")\n'
    return make_app(
        {
            "agent/channels/team.py": channel,
            "agent/schedules/digest.md": md_schedule(cron="0 0 1 1 *", channel="team", to=to),
        }
    )


def serve(root: Path, slack: FakeSlack) -> InProcessServer:
    # the compiled declaration's twin, mounted as eve serve mounts agent/channels/
    team = ChannelDeclaration(
        name="team", kind="slack", path="/channels/team", options={"api_url": slack.api_url}
    )
    return InProcessServer(root, env=ENV, channels=[team]).start()


def posted(slack: FakeSlack) -> list[dict[str, Any]]:
    """The bot's messages that start a thread (not replies in one)."""
    return [m for m in slack.messages.get("C1", []) if m.get("bot_id") and "thread_ts" not in m]


def test_the_answer_is_a_new_message_and_its_thread_continues_the_run(
    make_app: AppFactory, slack: FakeSlack
) -> None:
    slack.fail_next = 1  # Slack's own trouble once: the durable step tries again
    server = serve(slack_app(make_app, slack), slack)
    try:
        assert server.post("/schedules/digest/run").status_code == 202
        (message,) = wait_until(lambda: posted(slack))
        (run,) = scheduled_sessions(server)
        assert slack.post_attempts == ["C1", "C1"]
        assert message["text"]  # what the offline model answered
        assert message["metadata"]["event_payload"]["session"] == run["session_id"]
        listed = server.get("/schedules").json()["schedules"]
        assert listed[0]["deliver"] == "channel team to C1"

        # a person answers in the thread: the run's session takes it as its next turn
        mention(server, slack, "and tomorrow?", thread=message["ts"])
        replies = wait_for_replies(slack, message["ts"], 2)
        assert wait_until(lambda: server.get(f"/session/{run['session_id']}").json()["turns"] == 2)
        sessions = server.get("/sessions").json()["sessions"]
    finally:
        log = server.stop()
    parent, reply = replies  # the run's message, then the answer to the mention, once
    assert parent["ts"] == message["ts"]
    assert reply["thread_ts"] == message["ts"]
    assert reply["metadata"]["event_payload"]["session"] == run["session_id"]
    assert [s["sessionId"] for s in sessions] == [run["session_id"]]  # no thread session
    assert BOT_TOKEN not in log


def test_a_refusing_slack_is_retried_then_named_without_the_token(
    make_app: AppFactory, slack: FakeSlack
) -> None:
    server = serve(slack_app(make_app, slack, to="C404"), slack)
    try:
        assert server.post("/schedules/digest/run").status_code == 202

        def ended() -> dict[str, Any] | None:
            last = server.get("/schedules").json()["schedules"][0]["last_run"]
            return last if last and last["status"] == "ERROR" else None

        wait_until(ended)
    finally:
        log = server.stop()
    assert slack.post_attempts == ["C404"] * 4  # DELIVERY_ATTEMPTS, then given up
    assert "not delivered after 4 tries: ScheduleDeliveryFailed" in log
    assert (
        "the slack channel 'team' could not post to C404: Slack answered channel_not_found" in log
    )
    assert BOT_TOKEN not in log


async def test_no_bot_token_is_named_by_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    team = ChannelEntry(
        name="team", kind="slack", url_path="/channels/team", routes=[],
        logical_path="agent/channels/team.py", source_id="channels/team.py",
    )  # fmt: skip
    outcome = RunOutcome(
        name="digest", tick="t", session_id="ses_x", turn_id="turn_0", status="completed", text=""
    )
    # the token is checked before the session or Slack is looked at: no service needed
    unused = cast(SessionService, None)
    delivery = ChannelDelivery(channel="team", to="C1")
    with pytest.raises(ScheduleDeliveryFailed, match=r"\$SLACK_BOT_TOKEN is not set") as raised:
        await deliver_to_channel(unused, team, delivery, outcome)
    assert (raised.value.name, raised.value.status) == ("digest", None)


def test_a_scheduled_message_whose_answer_was_lost_is_posted_once(
    make_app: AppFactory, slack: FakeSlack
) -> None:
    slack.lose_answer_next = 1  # the run's message is posted; eve never hears its ts
    server = serve(slack_app(make_app, slack), slack)
    try:
        assert server.post("/schedules/digest/run").status_code == 202
        (run,) = wait_until(lambda: scheduled_sessions(server))
        # the step's next try finds the message in the conversation's history and records
        # its thread: a mention there then continues the run
        assert wait_until(lambda: last_run(server) == "SUCCESS")
        (message,) = posted(slack)
        mention(server, slack, "and tomorrow?", thread=message["ts"])
        replies = wait_for_replies(slack, message["ts"], 2)
    finally:
        server.stop()
    assert slack.post_attempts == ["C1", "C1"]  # the run's message, then the reply
    assert posted(slack) == [message]
    assert {r["metadata"]["event_payload"]["session"] for r in replies} == {run["session_id"]}


def test_a_reply_before_the_thread_is_recorded_finds_the_run_by_its_message(
    make_app: AppFactory, slack: FakeSlack
) -> None:
    server = serve(slack_app(make_app, slack), slack)
    try:
        assert server.post("/schedules/digest/run").status_code == 202
        assert wait_until(lambda: last_run(server) == "SUCCESS")
        (run,) = scheduled_sessions(server)
        (message,) = posted(slack)
        assert server.http is not None
        store = server.http.app.state.service.store  # type: ignore[attr-defined]
        with store.engine.begin() as c:
            # as between the post and its record (the answer lost, the next try to come)
            c.execute(conversation_keys.delete())
            c.execute(idempotency_keys.delete())
        # another app's message naming the run's session is not believed
        forged = {**message, "ts": slack.next_ts(), "bot_id": "B2", "user": "UOTHERAPP"}
        slack.messages["C1"].append(forged)
        mention(server, slack, "and tomorrow?", thread=forged["ts"])
        [elsewhere] = wait_for_replies(slack, forged["ts"], 2)[1:]
        mention(server, slack, "and tomorrow?", thread=message["ts"])
        [reply] = wait_for_replies(slack, message["ts"], 2)[1:]
    finally:
        server.stop()
    assert reply["metadata"]["event_payload"]["session"] == run["session_id"]
    assert elsewhere["metadata"]["event_payload"]["session"] != run["session_id"]


def test_a_worker_killed_between_slacks_answer_and_its_record_posts_once(
    make_app: AppFactory, slack: FakeSlack
) -> None:
    slack.hold_answer = killed = threading.Event()  # Slack posts it; the answer waits
    server = Server(slack_app(make_app, slack), env=ENV, token=None).start()
    try:
        assert server.post("/schedules/digest/run").status_code == 202
        wait_until(lambda: posted(slack))
        server.kill()  # SIGKILL while Slack's answer is on its way: nothing recorded
        killed.set()
        server.start()  # DBOS recovers the tick and runs its delivery step again
        assert wait_until(lambda: last_run(server) == "SUCCESS")
        (run,) = scheduled_sessions(server)
    finally:
        log = server.stop()
    (message,) = posted(slack)
    assert slack.post_attempts == ["C1"]
    assert message["metadata"]["event_payload"]["session"] == run["session_id"]
    assert BOT_TOKEN not in log
