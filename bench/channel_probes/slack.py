"""The ``slack`` channel's probe: a signed mention in, the thread's reply out.

Slack answers a turn with one message when it stops, posted to the Web API, so the probe
stands in for Slack both ways: it signs the Events API request and serves a loopback Web
API (``tests/channels/slack/fake_slack.py``) whose ``chat.postMessage`` it watches. The
answer's first byte is that reply's arrival; a one-message answer has no gaps.
"""

from __future__ import annotations

import asyncio
import json
import os
import time

import httpx
from slack_sdk.signature import SignatureVerifier

from bench.channel_probes import Probe
from tests.channels.slack.fake_slack import BOT_TOKEN, FakeSlack

KIND = "slack"
SECRET_ENV, TOKEN_ENV = "EVE_BENCH_SLACK_SECRET", "EVE_BENCH_SLACK_TOKEN"
SECRET = "bench-signing-secret"
#: the loopback Slack: its port is chosen now, for the channel's declaration
SLACK = FakeSlack()
OPTIONS = {"api_url": SLACK.api_url, "signing_secret_env": SECRET_ENV, "bot_token_env": TOKEN_ENV}
# the channel reads its secrets per request: a server started after this import has them
os.environ.setdefault(SECRET_ENV, SECRET)
os.environ.setdefault(TOKEN_ENV, BOT_TOKEN)
#: how often the probe looks for the reply: the resolution of its figure
POLL_SECONDS = 0.002


async def probe(client: httpx.AsyncClient, path: str) -> Probe:
    if not SLACK.running:
        await asyncio.to_thread(SLACK.start)
    ts = SLACK.say("C1", "U1", "<@UBOT> hello")
    event = {
        "type": "app_mention",
        "user": "U1",
        "text": "<@UBOT> hello",
        "ts": ts,
        "channel": "C1",
    }
    body = json.dumps(
        {"type": "event_callback", "team_id": "T1", "event": event, "event_id": f"Ev{ts}"}
    ).encode()
    stamp = str(int(time.time()))
    headers = {
        "content-type": "application/json",
        "x-slack-request-timestamp": stamp,
        "x-slack-signature": SignatureVerifier(SECRET).generate_signature(
            timestamp=stamp, body=body
        ),
    }
    sent = time.perf_counter()
    response = await client.post(f"{path}/events", content=body, headers=headers)
    response.raise_for_status()
    while not SLACK.bot_replies("C1", ts):
        await asyncio.sleep(POLL_SECONDS)
    return Probe(first_byte=time.perf_counter() - sent, gaps=[])
