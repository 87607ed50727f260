"""An MCP server's form (elicitation) through the ag_ui channel: an interrupt whose
``responseSchema`` holds the form's fields, accepted by a resume entry whose payload carries
``values``, checked against the form; through ``@ag-ui/client``'s HttpAgent in Node."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.channels.ag_ui import client
from tests.channels.ag_ui.apps import thread, user
from tests.channels.ag_ui.client import scenario
from tests.channels.ag_ui.loopback import TOKEN, ChannelServer
from tests.conftest import write_files
from tests.connections.asking_apps import asking_connection
from tests.sessions.apps import SCRIPTED_AGENT, call, say
from tests.sessions.harness import script

GOOD = {"name": "Ada", "nights": 2, "room": "double"}


@pytest.fixture(scope="module", autouse=True)
def _client() -> None:
    client.install()


@pytest.fixture(scope="module")
def forms(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChannelServer]:
    """Each session: a call of the asking server's ``book``, whose form a person fills."""
    root = tmp_path_factory.mktemp("forms")
    write_files(
        root,
        {
            "agent/agent.py": SCRIPTED_AGENT.replace("{limits}", "{'max_turns': 5}"),
            "agent/instructions.md": "Follow the script.\n",
            "agent/connections/asking.py": asking_connection(root / "counted"),
        },
    )
    script(root, [call("asking__book"), say("booked")])
    server = ChannelServer(root)
    server.start()
    yield server
    server.stop()


def test_a_form_is_answered_with_values_checked_against_its_fields(
    forms: ChannelServer,
) -> None:
    result = client.run(
        scenario(
            forms.channel_url,
            thread(),
            [
                {"message": user("book a room")},
                {"answer": "accept", "values": {"name": "Ada", "nights": "two"}},
                {"answer": "accept", "values": GOOD},
            ],
            token=TOKEN,
        )
    )
    parked, refused, accepted = result["runs"]
    [interrupt] = parked["events"][-1]["outcome"]["interrupts"]
    assert interrupt["reason"] == "form"
    schema = interrupt["responseSchema"]
    assert schema["properties"]["optionId"]["enum"] == ["accept", "decline", "cancel"]
    assert sorted(schema["properties"]["values"]["properties"]) == ["name", "nights", "room"]
    assert schema["then"] == {"required": ["optionId", "values"]}
    # values that do not fit the form are refused before the run starts, naming the fields
    assert refused["events"] == [], refused
    assert "HTTP 400" in refused["error"] and "form_answer_invalid" in refused["error"]
    assert "room" in refused["error"] and "nights" in refused["error"]
    assert refused["pendingInterrupts"] == parked["pendingInterrupts"]
    assert accepted["error"] is None, accepted
    results = [e["content"] for e in accepted["events"] if e["type"] == "TOOL_CALL_RESULT"]
    assert results == ["booked double for Ada, 2 nights"]
    assert accepted["pendingInterrupts"] == []
