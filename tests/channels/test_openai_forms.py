"""An MCP server's form (elicitation) through the ``openai`` channel, driven by the official
``openai`` SDK: the completion shows the form's fields, and a user message that is a JSON
object, ``{"optionId": "accept", "values": {...}}``, accepts it with values checked against
the form."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from eve.channels.declaration import ChannelDeclaration
from tests.conftest import AppFactory
from tests.connections.test_mcp_elicitation import asking_app
from tests.sessions.apps import call, say
from tests.sessions.inprocess import ROOT, InProcessServer

MODEL = "desk"
CHANNEL = ChannelDeclaration(name=MODEL, kind="openai", path="/channels/desk")


@pytest.fixture
def server(make_app: AppFactory) -> Iterator[InProcessServer]:
    running = InProcessServer(
        asking_app(make_app, [call("asking__book"), say("booked")]), channels=[CHANNEL]
    ).start()
    yield running
    running.stop()


def chat(client: OpenAI, text: str, session: dict[str, str] | None = None) -> Any:
    return client.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": text}], extra_headers=session
    )


def answer(values: dict[str, Any]) -> str:
    return json.dumps({"optionId": "accept", "values": values})


def test_a_form_is_accepted_by_a_structured_message_with_checked_values(
    server: InProcessServer,
) -> None:
    client = OpenAI(
        base_url=f"{ROOT}/channels/desk/v1",
        api_key="unused",
        http_client=httpx.Client(transport=server.transport()),
        max_retries=0,
    )
    asked = chat(client, "book a room")
    session = {"x-eve-session-id": asked.headers["x-eve-session-id"]}
    shown = asked.parse().choices[0].message.content or ""
    assert "asking asks: Who is staying, and how long?" in shown
    assert "room (one of single|double)" in shown and "nights (integer)" in shown
    assert '{"optionId": "accept", "values": {' in shown
    with pytest.raises(openai.BadRequestError) as wrong:
        chat(client, answer({"name": "Ada", "nights": "two"}), session)
    assert wrong.value.code == "form_answer_invalid"
    assert "room" in wrong.value.message and "nights" in wrong.value.message
    with pytest.raises(openai.BadRequestError) as malformed:
        chat(client, json.dumps({"optionId": "accept", "values": ["Ada"]}), session)
    assert "values an object" in malformed.value.message
    done = chat(client, answer({"name": "Ada", "nights": 2, "room": "double"}), session)
    assert done.parse().choices[0].message.content == "booked"
    events = server.events(session["x-eve-session-id"])
    [result] = [e["data"]["output"] for e in events if e["type"] == "action.result"]
    assert result == "booked double for Ada, 2 nights"
    # the values went to the server as an answer: no message of the session holds them
    assert "Ada" not in str([e for e in events if e["type"] != "action.result"])
