"""The ``mcp`` channel through the ``mcp`` SDK's client: the agent as an MCP server whose
four tools start, continue, read and cancel durable sessions (docs/channels/mcp.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from eve.channels.declaration import ChannelDeclaration
from eve.compiler import compile_to_disk
from tests.channels.mcp.client import PATH, connect, refusal, view
from tests.conftest import AppFactory, wait_for_file
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.inprocess import InProcessServer

TOKEN = "mcp-channel-test-token"
CHANNEL = ChannelDeclaration(
    name="agent", kind="mcp", path=PATH, options={"wait_seconds": 10, "max_wait_seconds": 20}
)
TOOL_NAMES = ["agent_start", "agent_update", "agent_get", "agent_cancel"]

Serve = Callable[..., Awaitable[InProcessServer]]


@pytest.fixture
def serve(make_app: AppFactory) -> Iterator[Serve]:
    """``await serve(script, tools=...)``: the scripted agent served with the channel (started
    in a thread: the server runs its own event loop)."""
    servers: list[InProcessServer] = []

    async def start(responses: list[dict[str, Any]], tools: tuple[str, ...] = ()) -> InProcessServer:
        root = scripted_app(make_app, responses, tools=tools)
        compile_to_disk(root)
        server = InProcessServer(root, env={"EVE_API_TOKEN": TOKEN}, token=TOKEN, channels=[CHANNEL])
        servers.append(server)
        return await asyncio.to_thread(server.start)

    yield start
    for server in servers:
        server.stop()


async def sessions_stored(server: InProcessServer) -> list[dict[str, Any]]:
    response = await asyncio.to_thread(server.request, "GET", "/sessions")
    assert response.status_code == 200, response.text
    sessions: list[dict[str, Any]] = response.json()["sessions"]
    return sessions


async def test_a_plain_answer_and_a_follow_up(serve: Serve) -> None:
    server = await serve([say("Hello from eve."), say("Again.")])
    async with connect(server, TOKEN) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == TOOL_NAMES
        assert all(t.output_schema and t.input_schema["type"] == "object" for t in listed.tools)

        first = view(await client.call_tool("agent_start", {"message": "hi"}))
        session = first["session_id"]
        assert (first["turn_id"], first["status"], first["answer"]) == (
            "turn_0",
            "completed",
            "Hello from eve.",
        )
        assert first["next"]["tool"] == "agent_update"

        second = view(await client.call_tool("agent_update", {"session_id": session, "message": "again"}))
        assert (second["turn_id"], second["status"], second["answer"]) == ("turn_1", "completed", "Again.")

        earlier = view(await client.call_tool("agent_get", {"session_id": session, "turn_id": "turn_0"}))
        assert (earlier["status"], earlier["answer"]) == ("completed", "Hello from eve.")
        latest = view(await client.call_tool("agent_get", {"session_id": session}))
        assert latest["turn_id"] == "turn_1"


async def test_a_tool_call_reports_progress_while_it_runs(serve: Serve) -> None:
    server = await serve([call("hold"), say("released")], tools=("hold",))
    progress: list[tuple[float, str | None]] = []

    async def told(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))
        if message == "calling hold":  # the tool runs: let it finish
            (server.app_root / "release").write_text("go")

    async with connect(server, TOKEN) as client:
        result = view(
            await client.call_tool("agent_start", {"message": "hold on"}, progress_callback=told)
        )
    assert (result["status"], result["answer"]) == ("completed", "released")
    [held] = result["calls"]
    assert (held["name"], held["status"], held["output"]) == ("hold", "completed", "released")
    messages = [m for _, m in progress]
    assert "calling hold" in messages and "hold: completed" in messages
    assert messages[-1] == "turn.completed turn_0"
    values = [v for v, _ in progress]
    assert values == sorted(set(values)), "progress must grow with every notification"


async def test_an_approval_is_answered_through_agent_update(serve: Serve) -> None:
    server = await serve([call("ship", item="anvil"), say("shipped")], tools=("ship",))
    async with connect(server, TOKEN) as client:
        parked = view(await client.call_tool("agent_start", {"message": "ship the anvil"}))
        assert parked["status"] == "waiting"
        [request] = parked["requests"]
        assert (request["kind"], request["tool_name"], request["input"]) == (
            "tool-approval",
            "ship",
            {"item": "anvil"},
        )
        assert [o["id"] for o in request["options"]] == ["approve", "deny"]
        assert parked["next"]["tool"] == "agent_update"
        assert not (server.app_root / "shipped.log").exists()

        answer = {"request_id": request["request_id"], "option_id": "approve"}
        done = view(
            await client.call_tool(
                "agent_update", {"session_id": parked["session_id"], "answers": [answer]}
            )
        )
    assert (done["turn_id"], done["status"], done["answer"], done["requests"]) == (
        "turn_0",
        "completed",
        "shipped",
        [],
    )
    assert [(c["name"], c["output"]) for c in done["calls"]] == [("ship", "shipped anvil")]
    assert (server.app_root / "shipped.log").read_text() == "anvil\n"


async def test_a_dropped_connection_resumes_from_the_log(serve: Serve) -> None:
    """The caller loses its connection while the turn runs; the same call again, with the
    same idempotency key, answers the turn the first one started (nothing is done twice)."""
    server = await serve([call("hold"), say("released")], tools=("hold",))
    arguments = {"message": "hold on", "idempotency_key": "7c0b0d4e-first-try"}
    running = asyncio.Event()

    async def told(value: float, total: float | None, message: str | None) -> None:
        if message == "calling hold":
            running.set()

    async def first_try() -> None:
        async with connect(server, TOKEN) as client:
            await client.call_tool("agent_start", arguments, progress_callback=told)

    dropped = asyncio.create_task(first_try())
    await running.wait()
    dropped.cancel()  # the client goes, and its connection with it
    with pytest.raises(asyncio.CancelledError):
        await dropped
    (server.app_root / "release").write_text("go")

    async with connect(server, TOKEN) as client:
        again = view(await client.call_tool("agent_start", arguments))
    assert (again["turn_id"], again["status"], again["answer"]) == ("turn_0", "completed", "released")
    assert [s["sessionId"] for s in await sessions_stored(server)] == [again["session_id"]]


async def test_a_cancel_stops_the_running_turn(serve: Serve) -> None:
    server = await serve([call("slowly", seconds=60), say("never")], tools=("slowly",))
    async with connect(server, TOKEN) as client:
        started = view(await client.call_tool("agent_start", {"message": "wait", "wait": 0}))
        session = started["session_id"]
        assert started["status"] in {"queued", "running"}
        assert started["next"] == {
            "tool": "agent_get",
            "arguments": {"session_id": session, "turn_id": "turn_0", "wait": 10.0},
            "why": started["next"]["why"],
        }
        await asyncio.to_thread(wait_for_file, server.app_root / f"slowly-{session}.started")

        stopped = view(await client.call_tool("agent_cancel", {"session_id": session}))
        assert (stopped["turn_id"], stopped["status"], stopped["cancelled"]) == (
            "turn_0",
            "cancelled",
            True,
        )
        again = view(await client.call_tool("agent_cancel", {"session_id": session}))
        assert (again["status"], again["cancelled"]) == ("cancelled", False)


async def test_bad_input_is_refused_and_nothing_is_stored(serve: Serve) -> None:
    server = await serve([say("unused")])
    refused = {
        "agent_start": [
            ({}, "invalid_body", "missing required field `message`"),
            ({"message": ""}, "invalid_body", "length >= 1"),
            ({"message": "hi", "mood": "x"}, "invalid_body", "unknown field `mood`"),
            ({"message": "hi", "wait": -1}, "invalid_body", ">= 0"),
            ({"message": "hi", "idempotency_key": "clé"}, "idempotency_key_invalid", "ASCII"),
            ({"message": "x" * 100_001}, "message_too_long", "the limit is 100000"),
        ],
        "agent_update": [
            ({"session_id": "ses_x"}, "invalid_body", "either `message`"),
            (
                {"session_id": "ses_x", "message": "a", "answers": [{"request_id": "r", "option_id": "o"}]},
                "invalid_body",
                "not both",
            ),
            ({"session_id": "ses_nope", "message": "a"}, "session_not_active", "ses_nope"),
        ],
        "agent_get": [
            ({"session_id": "ses_nope"}, "session_not_found", "ses_nope"),
        ],
    }
    async with connect(server, TOKEN) as client:
        for name, cases in refused.items():
            for arguments, code, said in cases:
                got, message = refusal(await client.call_tool(name, arguments))
                assert got == code and said in message, (name, arguments, message)
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("agent_explode", {})
        assert unknown.value.code == INVALID_PARAMS and "agent_explode" in unknown.value.message
        assert await sessions_stored(server) == []

        # a turn id that is no turn of a real session
        made = view(await client.call_tool("agent_start", {"message": "hi"}))
        for turn_id, code in [("turn_0x", "invalid_body"), ("turn_0", None)]:
            result = await client.call_tool(
                "agent_get", {"session_id": made["session_id"], "turn_id": turn_id}
            )
            assert (refusal(result)[0] if code else view(result)["status"]) == (code or "completed")


async def test_a_request_without_the_token_is_refused(serve: Serve) -> None:
    server = await serve([say("unused")])
    for token in (None, "wrong-token"):
        try:
            async with connect(server, token):
                raise AssertionError(f"connected with {token!r}")
        except* MCPError as refused:
            [error] = [e for e in _leaves(refused) if isinstance(e, MCPError)]
            assert error.message == "unauthorized: missing or wrong bearer token"
    assert await sessions_stored(server) == []


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    return [
        leaf
        for error in group.exceptions
        for leaf in (_leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    ]


async def test_a_restart_mid_turn_loses_nothing(serve: Serve) -> None:
    """The server stops while a tool runs and starts again on the same app root: the turn
    goes on, and the same client reads its answer (the server keeps no MCP session)."""
    server = await serve([call("hold"), say("released")], tools=("hold",))
    root: Path = server.app_root
    async with connect(server, TOKEN) as client:
        started = view(await client.call_tool("agent_start", {"message": "hold on", "wait": 0}))
        session = started["session_id"]
        await asyncio.to_thread(wait_for_file, root / f"hold-{session}.started")

        await asyncio.to_thread(server.stop)
        (root / f"hold-{session}.started").unlink()
        await asyncio.to_thread(server.start)
        # the tool runs again after the restart, then is let go
        await asyncio.to_thread(wait_for_file, root / f"hold-{session}.started")
        (root / "release").write_text("go")

        done = view(
            await client.call_tool(
                "agent_get", {"session_id": session, "turn_id": "turn_0", "wait": 10}
            )
        )
    assert (done["status"], done["answer"]) == ("completed", "released")
    assert [(c["name"], c["output"]) for c in done["calls"]] == [("hold", "released")]
