"""The ``slack`` channel: signed Events API and interactivity requests in, replies out
through slack_sdk's WebClient to a loopback Slack that keeps Slack's documented rules."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
import sqlalchemy as sa
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier

from bench.channel_probes import slack as slack_probe
from eve.channels.declaration import ChannelDeclaration
from eve.channels.kinds.slack import channel_principal
from eve.channels.sessions import ChannelSessions
from eve.channels.turn_log import running_turn
from eve.sessions.tables import input_requests
from tests.channels.agent_app import HELD, SHIPPED, TEA, restart_and_release, run_probe, write_app
from tests.channels.slack.fake_slack import BOT_TOKEN, FakeSlack
from tests.conftest import wait_for_file
from tests.sessions.inprocess import InProcessServer

SECRET = "slack-signing-secret"
EVENTS = "/channels/team/events"
ACTIONS = "/channels/team/interactivity"
STARTER, OTHER = "U1", "U2"
#: a mention with no channel and no ts, which Slack always sends
MENTION_WITHOUT_CHANNEL = {"type": "app_mention", "user": STARTER, "text": "hi"}


@pytest.fixture(scope="module")
def slack() -> Iterator[FakeSlack]:
    running = FakeSlack().start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, slack: FakeSlack) -> Iterator[InProcessServer]:
    root = write_app(tmp_path_factory.mktemp("slack"))
    channel = ChannelDeclaration(
        name="team", kind="slack", path="/channels/team", options={"api_url": slack.api_url}
    )
    bench = ChannelDeclaration(
        name="bench", kind="slack", path="/channels/bench", options=slack_probe.OPTIONS
    )
    env = {"EVE_API_TOKEN": "t", "SLACK_SIGNING_SECRET": SECRET, "SLACK_BOT_TOKEN": BOT_TOKEN}
    running = InProcessServer(root, env=env, token="t", channels=[channel, bench]).start()
    yield running
    running.stop()


def signed(
    body: bytes, content_type: str, *, secret: str = SECRET, age: float = 0
) -> dict[str, str]:
    stamp = str(int(time.time() - age))
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    return {
        "content-type": content_type,
        "x-slack-request-timestamp": stamp,
        "x-slack-signature": signature,
    }


def post_event(server: InProcessServer, payload: dict[str, Any], **headers: str) -> httpx.Response:
    body = json.dumps(payload).encode()
    assert server.http is not None
    return server.http.post(
        EVENTS, content=body, headers={**signed(body, "application/json"), **headers}
    )


def mention(
    server: InProcessServer,
    slack: FakeSlack,
    text: str,
    *,
    user: str = STARTER,
    thread: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """``user`` mentions the bot (in ``thread``): the message lands in Slack, and Slack sends
    eve the event. The thread's ts, and the payload (to send again as Slack's retry)."""
    said = f"<@UBOT> {text}"
    ts = slack.say("C1", user, said, thread_ts=thread)
    event = {"type": "app_mention", "user": user, "text": said, "ts": ts, "channel": "C1"}
    if thread is not None:
        event["thread_ts"] = thread
    payload = {"type": "event_callback", "team_id": "T1", "event": event, "event_id": f"Ev{ts}"}
    response = post_event(server, payload)
    assert response.status_code == 200, response.text
    return thread or ts, payload


def press(
    server: InProcessServer, user: str, button: dict[str, Any], thread: str
) -> httpx.Response:
    payload = {
        "type": "block_actions",
        "user": {"id": user},
        "team": {"id": "T1"},
        "channel": {"id": "C1"},
        "message": {"ts": thread, "thread_ts": thread},
        "actions": [{"action_id": button["action_id"], "value": button["value"]}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    assert server.http is not None
    return server.http.post(
        ACTIONS, content=body, headers=signed(body, "application/x-www-form-urlencoded")
    )


def replies(slack: FakeSlack, thread: str) -> list[dict[str, Any]]:
    """The thread's bot replies, read as an app would: conversations.replies."""
    web = WebClient(token=BOT_TOKEN, base_url=slack.api_url)
    page = web.conversations_replies(channel="C1", ts=thread, include_all_metadata=True)
    return [m for m in page["messages"] if m.get("bot_id")]


def wait_until(done: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def wait_for_replies(slack: FakeSlack, thread: str, count: int) -> list[dict[str, Any]]:
    wait_until(lambda: len(slack.bot_replies("C1", thread)) >= count, f"{count} replies")
    return replies(slack, thread)


def buttons(reply: dict[str, Any]) -> dict[str, dict[str, Any]]:
    [actions] = [b for b in reply["blocks"] if b["type"] == "actions"]
    return {json.loads(e["value"])["o"]: e for e in actions["elements"]}


def session_count(server: InProcessServer) -> int:
    return len(server.get("/sessions?limit=100").json()["sessions"])


def test_url_verification_echoes_the_challenge(server: InProcessServer) -> None:
    response = post_event(server, {"type": "url_verification", "challenge": "abc123"})
    assert response.json() == {"challenge": "abc123"}


def test_a_mention_is_answered_in_its_thread_once_despite_retries_and_rate_limits(
    server: InProcessServer, slack: FakeSlack
) -> None:
    slack.rate_limit_next = 1  # Slack answers the first post 429, Retry-After: 1
    thread, payload = mention(server, slack, "what is tea?")
    [reply] = wait_for_replies(slack, thread, 1)
    assert (reply["text"], reply["thread_ts"]) == (TEA, thread)
    assert reply["metadata"]["event_type"] == "eve_reply"
    assert slack.rate_limited == 1
    session_id = reply["metadata"]["event_payload"]["session"]
    events = server.events(session_id)
    [received] = [e["data"]["message"] for e in events if e["type"] == "message.received"]
    assert received == f"<@{STARTER}>: what is tea?"
    assert "action.result" in [e["type"] for e in events]  # the tool ran inside eve

    # Slack retries the event (it did not see the ack): no second turn, no second reply
    retry = post_event(
        server, payload, **{"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"}
    )
    assert retry.status_code == 200
    mention(server, slack, "ship it", thread=thread)
    later = wait_for_replies(slack, thread, 2)
    assert [r["text"] for r in later][:1] == [TEA] and len(later) == 2
    started = [e for e in server.events(session_id) if e["type"] == "turn.started"]
    assert len(started) == 2


def test_each_slack_user_sends_their_own_turns_and_answers_only_their_own_approvals(
    server: InProcessServer, slack: FakeSlack
) -> None:
    thread, _ = mention(server, slack, "what is tea?")
    session_id = wait_for_replies(slack, thread, 1)[0]["metadata"]["event_payload"]["session"]
    # the session is the channel's, the turn the starter's: the tool reads ctx.principal
    owner = server.get(f"/session/{session_id}").json()["owner"]
    assert owner == {"id": "slack:team", "kind": "channel"}
    [looked_up] = [e["data"] for e in server.events(session_id) if e["type"] == "action.result"]
    assert looked_up["output"] == f"tea: a drink, for slack:T1:{STARTER}"

    # another user's message in the same thread is their turn: they ask the approval
    mention(server, slack, "ship it", user=OTHER, thread=thread)
    asking = wait_for_replies(slack, thread, 2)[-1]
    choices = buttons(asking)
    assert set(choices) == {"approve", "deny"} and "`ship`" in asking["text"]

    assert press(server, STARTER, choices["approve"], thread).status_code == 200
    note = slack.ephemeral[-1]
    assert note["user"] == STARTER and note["text"].startswith("Only the person whose message")
    assert len(slack.bot_replies("C1", thread)) == 2  # nothing answered
    assert "input.resolved" not in [e["type"] for e in server.events(session_id)]

    assert press(server, OTHER, choices["approve"], thread).status_code == 200
    assert wait_for_replies(slack, thread, 3)[-1]["text"] == SHIPPED
    assert "book" in (server.app_root / "shipped.log").read_text()
    [resolved] = [e["data"] for e in server.events(session_id) if e["type"] == "input.resolved"]
    assert resolved["responder"] == {"id": f"slack:T1:{OTHER}", "kind": "channel"}
    # the other button of the answered request changes nothing, whoever presses it
    for user in (OTHER, STARTER):
        assert press(server, user, choices["deny"], thread).status_code == 200
        note = slack.ephemeral[-1]
        assert (note["user"], note["text"]) == (user, "This was answered already.")
    assert len(slack.bot_replies("C1", thread)) == 3


def test_an_approval_the_channel_itself_asked_is_answered_by_the_thread_starter(
    server: InProcessServer, slack: FakeSlack
) -> None:
    thread, _ = mention(server, slack, "what is tea?")
    wait_for_replies(slack, thread, 1)
    mention(server, slack, "ship it", user=OTHER, thread=thread)
    choices = buttons(wait_for_replies(slack, thread, 2)[-1])
    # as an eve from before Slack users were principals recorded it: the channel asked
    request_id = json.loads(choices["approve"]["value"])["r"]
    assert server.http is not None
    store = server.http.app.state.service.store  # type: ignore[attr-defined]
    with store.engine.begin() as c:
        c.execute(
            sa.update(input_requests)
            .where(input_requests.c.request_id == request_id)
            .values(asker_id="slack:team", asker_kind="channel")
        )
    assert press(server, OTHER, choices["approve"], thread).status_code == 200
    assert slack.ephemeral[-1]["text"].startswith("Only the person whose message")
    assert press(server, STARTER, choices["approve"], thread).status_code == 200
    assert wait_for_replies(slack, thread, 3)[-1]["text"] == SHIPPED


def test_a_direct_message_is_answered_and_the_bots_own_messages_are_not(
    server: InProcessServer, slack: FakeSlack
) -> None:
    slack.channels.add("D1")
    before = session_count(server)
    ignored = [
        {"type": "message", "channel_type": "im", "bot_id": "B1", "user": "UBOT"},
        {"type": "message", "channel_type": "im", "subtype": "message_changed", "user": STARTER},
        {"type": "message", "channel_type": "channel", "user": STARTER},  # no mention
    ]
    for i, event in enumerate(ignored):
        event.update({"text": "hi", "ts": f"2.00000{i}", "channel": "D1"})
        payload = {"type": "event_callback", "team_id": "T1", "event": event, "event_id": f"EvX{i}"}
        assert post_event(server, payload).status_code == 200
    assert session_count(server) == before

    ts = slack.say("D1", STARTER, "what is tea?")
    event = {"type": "message", "channel_type": "im", "user": STARTER, "text": "what is tea?"}
    event.update({"ts": ts, "channel": "D1"})
    post_event(
        server, {"type": "event_callback", "team_id": "T1", "event": event, "event_id": "EvDM"}
    )
    wait_until(lambda: bool(slack.bot_replies("D1", ts)), "the reply to a direct message")
    assert slack.bot_replies("D1", ts)[0]["text"] == TEA


def held_thread(server: InProcessServer, slack: FakeSlack) -> tuple[str, str]:
    """A thread whose third turn runs ``hold``; its ts and session."""
    thread, _ = mention(server, slack, "what is tea?")
    session_id = wait_for_replies(slack, thread, 1)[0]["metadata"]["event_payload"]["session"]
    mention(server, slack, "ship it", thread=thread)
    press(server, STARTER, buttons(wait_for_replies(slack, thread, 2)[-1])["deny"], thread)
    wait_for_replies(slack, thread, 3)
    mention(server, slack, "hold on", thread=thread)
    wait_for_file(server.app_root / f"hold-{session_id}.started")
    return thread, session_id


def test_a_failed_turn_is_said_in_the_thread(server: InProcessServer, slack: FakeSlack) -> None:
    thread, session_id = held_thread(server, slack)
    (server.app_root / f"release-{session_id}").write_text("go")
    assert wait_for_replies(slack, thread, 4)[-1]["text"] == HELD
    mention(server, slack, "more", thread=thread)  # the script has no fourth answer
    failed = wait_for_replies(slack, thread, 5)[-1]["text"]
    assert failed.startswith("The turn failed:") and "offline script" in failed


def test_the_starter_cancels_a_running_turn(server: InProcessServer, slack: FakeSlack) -> None:
    thread, session_id = held_thread(server, slack)
    mention(server, slack, "cancel", user=OTHER, thread=thread)
    assert "Only <@U1>" in slack.ephemeral[-1]["text"]
    mention(server, slack, "cancel", thread=thread)
    assert wait_for_replies(slack, thread, 4)[-1]["text"] == "(cancelled)"
    assert "turn.cancelled" in [e["type"] for e in server.events(session_id)]


@pytest.mark.parametrize(
    "headers",
    [
        {},  # unsigned
        {"secret": "another-secret"},
        {"age": 6 * 60.0},  # outside the five-minute window
    ],
)
def test_a_request_not_signed_by_slack_is_refused_and_stores_nothing(
    server: InProcessServer, slack: FakeSlack, headers: dict[str, Any]
) -> None:
    before = session_count(server)
    event = {
        "type": "app_mention",
        "user": STARTER,
        "text": "hi",
        "ts": "1.000001",
        "channel": "C1",
    }
    body = json.dumps({"type": "event_callback", "team_id": "T1", "event": event}).encode()
    sent = (
        signed(body, "application/json", **headers)
        if headers
        else {"content-type": "application/json"}
    )
    assert server.http is not None
    response = server.http.post(EVENTS, content=body, headers=sent)
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_signature"
    assert session_count(server) == before


@pytest.mark.parametrize(
    "body",
    [b"[1, 2]", json.dumps({"type": "event_callback", "event": MENTION_WITHOUT_CHANNEL}).encode()],
)
def test_a_signed_body_that_is_not_slacks_is_a_400(server: InProcessServer, body: bytes) -> None:
    before = session_count(server)
    assert server.http is not None
    sent = {**signed(body, "application/json"), "x-slack-retry-num": "1"}
    response = server.http.post(EVENTS, content=body, headers=sent)
    assert (response.status_code, response.json()["error"]) == (400, "invalid_request")
    assert session_count(server) == before


def test_the_loopback_slack_refuses_a_wrong_token_and_an_unknown_channel(slack: FakeSlack) -> None:
    with pytest.raises(SlackApiError) as wrong:
        WebClient(token="xoxb-wrong", base_url=slack.api_url).chat_postMessage(
            channel="C1", text="x"
        )
    assert wrong.value.response["error"] == "invalid_auth"
    with pytest.raises(SlackApiError) as unknown:
        WebClient(token=BOT_TOKEN, base_url=slack.api_url).chat_postMessage(channel="C9", text="x")
    assert unknown.value.response["error"] == "channel_not_found"


def test_a_turn_running_at_a_restart_is_answered_after_it(
    server: InProcessServer, slack: FakeSlack
) -> None:
    thread, session_id = held_thread(server, slack)
    restart_and_release(server, session_id)
    # the restarted channel picks up its threads as it starts, before Slack says anything
    assert wait_for_replies(slack, thread, 4)[-1]["text"] == HELD
    other, _ = mention(server, slack, "what is tea?")
    assert wait_for_replies(slack, other, 1)[0]["text"] == TEA
    assert len(slack.bot_replies("C1", thread)) == 4


class _CountedSessions(ChannelSessions):
    """The channel's sessions, counting the log events read through them."""

    read = 0

    async def events(self, session_id: str, start: int = 0, *, follow: bool) -> AsyncIterator[str]:
        lines = await super().events(session_id, start, follow=follow)

        async def counted() -> AsyncIterator[str]:
            async for line in lines:
                self.read += bool(line)
                yield line

        return counted()


SweepView = tuple[str | None, tuple[str, int] | None, int]


def asked_for_hold(log: list[dict[str, Any]]) -> bool:
    """Whether turn 2's call of ``hold`` is in the log: all the turn writes until it ends."""
    starts = [
        e["meta"]["index"]
        for e in log
        if e["type"] == "turn.started" and e["data"].get("turn_id") == "turn_2"
    ]
    return bool(starts) and any(
        e["type"] == "actions.requested" and e["meta"]["index"] > starts[0] for e in log
    )


def sweep_view(server: InProcessServer, session_id: str) -> SweepView:
    """The turn the engine runs in the session, what the restart's sweep finds of it
    (``running_turn``), and how many log events the sweep read for it."""
    assert server.http is not None and server.http.portal is not None
    service = server.http.app.state.service  # type: ignore[attr-defined]

    async def run() -> SweepView:
        sessions = _CountedSessions(service, channel_principal("team"))
        found = await running_turn(sessions, session_id)
        return await sessions.running_turn(session_id), found, sessions.read

    return server.http.portal.call(run)


def test_the_sweep_reads_a_running_turn_from_its_start_and_leaves_a_waiting_one_to_post(
    server: InProcessServer, slack: FakeSlack
) -> None:
    thread, session_id = held_thread(server, slack)
    # the hold may start before the events said ahead of it are in the log: the session's
    # writer commits them while the step runs (eve orders them before the step's record,
    # not before its tools), so the log is read once they are
    log = server.wait_for(session_id, asked_for_hold)
    start = min(e["meta"]["index"] for e in log if e["data"].get("turn_id") == "turn_2")
    engine, found, read = sweep_view(server, session_id)
    assert engine == "turn_2" and found == ("turn_2", start)
    # the turn's own stretch, not turns 0 and 1 before it
    assert 0 < read <= len(log) - start
    (server.app_root / f"release-{session_id}").write_text("go")
    assert wait_for_replies(slack, thread, 4)[-1]["text"] == HELD
    assert sweep_view(server, session_id)[:2] == (None, None)

    # the engine runs a turn that waits on a person; the sweep posts its prompt, not follows it
    asking, _ = mention(server, slack, "what is tea?")
    asking_session = wait_for_replies(slack, asking, 1)[0]["metadata"]["event_payload"]["session"]
    mention(server, slack, "ship it", thread=asking)
    choices = buttons(wait_for_replies(slack, asking, 2)[-1])
    assert sweep_view(server, asking_session)[:2] == ("turn_1", None)
    assert press(server, STARTER, choices["deny"], asking).status_code == 200
    wait_for_replies(slack, asking, 3)


def test_the_bench_probe_times_a_mention_to_its_reply(server: InProcessServer) -> None:
    try:
        measured = run_probe(server, slack_probe.probe, "/channels/bench")
    finally:
        slack_probe.SLACK.stop()
    assert measured.first_byte > 0 and measured.gaps == []
    [reply] = slack_probe.SLACK.bot_replies("C1", slack_probe.SLACK.messages["C1"][0]["ts"])
    assert reply["text"] == TEA


def test_a_form_without_a_valid_signature_is_refused_and_does_nothing(
    server: InProcessServer,
) -> None:
    # the guard leaves a channel's body format to its kind: Slack's interactivity posts
    # forms, and the channel refuses any that Slack did not sign
    body = urlencode({"payload": "{}"}).encode()
    assert server.http is not None
    form = {"content-type": "application/x-www-form-urlencoded"}
    unsigned = server.http.post(ACTIONS, content=body, headers=form)
    assert (unsigned.status_code, unsigned.json()["error"]) == (401, "invalid_signature")
    forged = {**form, "x-slack-signature": "v0=forged", "x-slack-request-timestamp": "1"}
    assert server.http.post(ACTIONS, content=body, headers=forged).status_code == 401
