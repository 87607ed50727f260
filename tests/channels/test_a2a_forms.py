"""An MCP server's form (elicitation) through the ``a2a`` channel, with the a2a-sdk's client:
the task is ``input-required`` with the form in its data part, and a data part
``{"optionId": "accept", "values": {...}}`` on the task accepts it, checked against the form."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from a2a.helpers import get_data_parts, new_data_part
from a2a.types import Message, Role, SendMessageRequest
from a2a.utils.errors import InvalidParamsError

from tests.channels.a2a_client import (
    CHANNEL,
    COMPLETED,
    INPUT_REQUIRED,
    TOKEN,
    a2a_client,
    final_state,
    read,
    task_of,
    text,
)
from tests.conftest import AppFactory
from tests.connections.test_mcp_elicitation import asking_app
from tests.sessions.apps import call, say
from tests.sessions.inprocess import InProcessServer


@pytest.fixture
def server(make_app: AppFactory) -> Iterator[InProcessServer]:
    root = asking_app(make_app, [call("asking__book"), say("booked")])
    running = InProcessServer(
        root, env={"EVE_API_TOKEN": TOKEN}, token=TOKEN, channels=[CHANNEL]
    ).start()
    yield running
    running.stop()


def accept(task_id: str, values: dict[str, Any]) -> SendMessageRequest:
    message = Message(
        message_id=uuid.uuid4().hex,
        role=Role.ROLE_USER,
        parts=[new_data_part({"optionId": "accept", "values": values})],
        task_id=task_id,
    )
    return SendMessageRequest(message=message)


async def test_a_form_is_accepted_by_a_data_part_with_checked_values(
    server: InProcessServer,
) -> None:
    async with a2a_client(server) as client:
        asked = await read(client, text("book a room"))
        assert final_state(asked) == INPUT_REQUIRED
        status = asked[-1].status_update.status
        [data] = get_data_parts(list(status.message.parts))
        [form] = data["inputRequests"]
        assert form["kind"] == "form"
        assert sorted(form["schema"]["properties"]) == ["name", "nights", "room"]
        assert '"optionId": "accept", "values"' in status.message.parts[0].text
        task_id = task_of(asked).id
        with pytest.raises(InvalidParamsError, match="nights") as wrong:
            await read(client, accept(task_id, {"name": "Ada", "nights": "two"}))
        assert "room" in str(wrong.value)
        done = await read(client, accept(task_id, {"name": "Ada", "nights": 2, "room": "double"}))
    assert final_state(done) == COMPLETED
    events = server.events(task_of(asked).context_id)
    [result] = [e["data"]["output"] for e in events if e["type"] == "action.result"]
    assert result == "booked double for Ada, 2 nights"
