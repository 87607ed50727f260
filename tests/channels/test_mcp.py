"""The ``mcp`` channel through the ``mcp`` SDK's client: the agent as an MCP server whose
four tools start, continue, read and cancel durable sessions (docs/channels/mcp.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from tests.channels.mcp.client import TOKEN, connect, refusal, served, sessions_stored, view
from tests.sessions.apps import call, say
from tests.sessions.inprocess import InProcessServer

TOOL_NAMES = ["agent_start", "agent_update", "agent_get", "agent_cancel"]


#: one server for the tests whose sessions replay this script: a parked approval, then a
#: plain answer (a turn's first run after a server starts waits for its queue, so sharing
#: the server keeps the module quick)
SHOP = [call("ship", item="anvil"), say("shipped"), say("Again.")]


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    server = served(tmp_path_factory.mktemp("mcp") / "shop", SHOP, tools=("ship",))
    yield server
    server.stop()


async def test_an_approval_answered_through_agent_update_then_a_plain_follow_up(
    shop: InProcessServer,
) -> None:
    async with connect(shop, TOKEN) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == TOOL_NAMES
        assert all(t.output_schema and t.input_schema["type"] == "object" for t in listed.tools)

        parked = view(await client.call_tool("agent_start", {"message": "ship the anvil"}))
        session = parked["session_id"]
        assert (parked["turn_id"], parked["status"], parked["answer"]) == (
            "turn_0",
            "waiting",
            None,
        )
        [request] = parked["requests"]
        assert (request["kind"], request["tool_name"], request["input"]) == (
            "tool-approval",
            "ship",
            {"item": "anvil"},
        )
        assert [o["id"] for o in request["options"]] == ["approve", "deny"]
        assert parked["next"]["tool"] == "agent_update"

        answer = {"request_id": request["request_id"], "option_id": "approve"}
        done = view(
            await client.call_tool("agent_update", {"session_id": session, "answers": [answer]})
        )
        assert (done["turn_id"], done["status"], done["answer"], done["requests"]) == (
            "turn_0",
            "completed",
            "shipped",
            [],
        )
        assert [(c["name"], c["output"]) for c in done["calls"]] == [("ship", "shipped anvil")]
        twice = await client.call_tool("agent_update", {"session_id": session, "answers": [answer]})
        assert refusal(twice)[0] == "input_request_not_pending"

        plain = view(
            await client.call_tool("agent_update", {"session_id": session, "message": "more?"})
        )
        assert (plain["turn_id"], plain["status"], plain["answer"], plain["calls"]) == (
            "turn_1",
            "completed",
            "Again.",
            [],
        )
        assert plain["next"]["tool"] == "agent_update"

        earlier = view(
            await client.call_tool("agent_get", {"session_id": session, "turn_id": "turn_0"})
        )
        assert (earlier["status"], earlier["answer"]) == ("completed", "shipped")
        latest = view(await client.call_tool("agent_get", {"session_id": session}))
        assert (latest["turn_id"], latest["answer"]) == ("turn_1", "Again.")

        # the script has no fourth response: the turn fails, and says why
        failed = view(
            await client.call_tool("agent_update", {"session_id": session, "message": "?"})
        )
        assert (failed["turn_id"], failed["status"]) == ("turn_2", "failed")
        assert failed["error"].startswith("OfflineScriptError: ")
        assert failed["next"]["tool"] == "agent_update"
    assert (shop.app_root / "shipped.log").read_text() == "anvil\n"


async def test_a_cancel_stops_a_waiting_turn(shop: InProcessServer) -> None:
    async with connect(shop, TOKEN) as client:
        parked = view(await client.call_tool("agent_start", {"message": "ship it", "wait": 0}))
        session = parked["session_id"]
        assert parked["status"] in {"queued", "running"}
        assert parked["next"] == {
            "tool": "agent_get",
            "arguments": {"session_id": session, "turn_id": "turn_0", "wait": 10.0},
            "why": parked["next"]["why"],
        }
        # what the answer says to call next: read the turn, waiting for it to settle
        waiting = view(await client.call_tool("agent_get", parked["next"]["arguments"]))
        assert waiting["status"] == "waiting"

        stopped = view(await client.call_tool("agent_cancel", {"session_id": session}))
        assert (
            stopped["turn_id"],
            stopped["status"],
            stopped["cancelled"],
            stopped["requests"],
        ) == (
            "turn_0",
            "cancelled",
            True,
            [],
        )
        again = view(await client.call_tool("agent_cancel", {"session_id": session}))
        assert (again["status"], again["cancelled"]) == ("cancelled", False)


async def test_bad_input_is_refused_and_nothing_is_stored(shop: InProcessServer) -> None:
    before = await sessions_stored(shop)
    refused = {
        "agent_start": [
            ({}, "invalid_body", "missing required field `message`"),
            ({"message": ""}, "invalid_body", "length >= 1"),
            ({"message": "hi", "mood": "x"}, "invalid_body", "unknown field `mood`"),
            ({"message": "hi", "wait": -1}, "invalid_body", ">= 0"),
            ({"message": "hi", "idempotency_key": "clé"}, "idempotency_key_invalid", "ASCII"),
            (
                {"message": "hi", "idempotency_key": "k" * 201},
                "idempotency_key_invalid",
                "1 to 200",
            ),
            ({"message": "hi", "idempotency_key": ""}, "idempotency_key_invalid", "1 to 200"),
            ({"message": "x" * 100_001}, "message_too_long", "the limit is 100000"),
        ],
        "agent_update": [
            ({"session_id": "ses_x"}, "invalid_body", "either `message`"),
            (
                {
                    "session_id": "ses_x",
                    "message": "a",
                    "answers": [{"request_id": "r", "option_id": "o"}],
                },
                "invalid_body",
                "not both",
            ),
            ({"session_id": "ses_nope", "message": "a"}, "session_not_active", "ses_nope"),
        ],
        "agent_get": [
            ({"session_id": "ses_nope"}, "session_not_found", "ses_nope"),
            ({"session_id": "ses_nope", "turn_id": "turn_0x"}, "invalid_body", "turn_0x"),
        ],
        "agent_cancel": [({"session_id": "ses_nope"}, "session_not_found", "ses_nope")],
    }
    async with connect(shop, TOKEN) as client:
        for name, cases in refused.items():
            for arguments, code, said in cases:
                got, message = refusal(await client.call_tool(name, arguments))
                assert got == code and said in message, (name, arguments, message)
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("agent_explode", {})
        assert unknown.value.code == INVALID_PARAMS and "agent_explode" in unknown.value.message
    assert await sessions_stored(shop) == before


async def test_a_request_without_the_token_is_refused(shop: InProcessServer) -> None:
    before = await sessions_stored(shop)
    for token in (None, "wrong-token"):
        try:
            async with connect(shop, token):
                raise AssertionError(f"connected with {token!r}")
        except* MCPError as refused:
            [error] = [e for e in _leaves(refused) if isinstance(e, MCPError)]
            assert error.message == "unauthorized: missing or wrong bearer token"
    assert await sessions_stored(shop) == before


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    return [
        leaf
        for error in group.exceptions
        for leaf in (_leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    ]
