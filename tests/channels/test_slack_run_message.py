"""A scheduled run's message is found in the history however Slack's ts and the tick line up.

Slack's ``ts`` is its own clock, and its fraction is a sequence within the second, not
microseconds: a run's message posted in the same second as its tick can carry a ts below
the tick's exact time. Read back from exactly the tick, it was missed, and a retried
delivery posted the run's message a second time (seen once under load in the suite)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slack_sdk import WebClient

from eve.channels.slack_delivery import REPLY_EVENT, run_message
from tests.channels.slack.fake_slack import BOT_TOKEN, FakeSlack


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    running = FakeSlack().start()
    yield running
    running.stop()


def test_a_message_of_the_ticks_own_second_is_found(slack: FakeSlack) -> None:
    web = WebClient(token=BOT_TOKEN, base_url=slack.api_url)
    metadata = {"event_type": REPLY_EVENT, "event_payload": {"session": "ses_a", "turn": "turn_0"}}
    posted = web.chat_postMessage(channel="C1", text="the digest", metadata=metadata)
    ts = str(posted["ts"])
    # the tick came later in that second than the ts's fraction reads, as a time
    tick = int(float(ts)) + 0.9
    assert float(ts) < tick, "the fake's ts fraction is a sequence, as Slack's is"
    found = run_message(web, conversation="C1", session_id="ses_a", turn_id="turn_0", since=tick)
    assert found == ts
    # another session's run is not taken for this one
    other = run_message(web, conversation="C1", session_id="ses_b", turn_id="turn_0", since=tick)
    assert other is None
