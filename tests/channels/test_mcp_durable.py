"""The ``mcp`` channel over what must survive: a turn that runs while the call waits (its
progress notified), a connection dropped mid-turn (over a real socket), and a server
restarted mid-turn. Each test has a server of its own (the restart stops it), so they live
apart from test_mcp.py's shared one: one eve app runs in a process at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from bench.channel_probes.mcp import probe
from eve.channels.sessions import ChannelSessions
from tests.channels.mcp.client import (
    CHANNEL,
    PATH,
    TOKEN,
    connect,
    modern,
    refusal,
    scripted,
    served,
    view,
)
from tests.conftest import wait_for_file
from tests.sessions.apps import call, say
from tests.sessions.inprocess import ROOT, InProcessServer
from tests.sessions.threaded import ThreadedServer

Serve = Callable[..., Awaitable[InProcessServer]]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    """``await serve(script, tools=...)``: the scripted agent served with the channel, for a
    test that needs its own (started in a thread: the server runs its own event loop)."""
    servers: list[InProcessServer] = []

    async def start(
        responses: list[dict[str, Any]], tools: tuple[str, ...] = ()
    ) -> InProcessServer:
        server = await asyncio.to_thread(served, tmp_path / "app", responses, tools=tools)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


async def held_and_told(server: InProcessServer) -> None:
    """``agent_start`` of a turn that calls ``hold``, let go once its progress says so: the
    answer and every notification, checked."""
    progress: list[tuple[float, str | None]] = []

    async def told(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))
        if message == "calling hold":  # the tool runs: let it finish
            (server.app_root / "release").write_text("go")

    async with modern(server) as client:  # the newest protocol, beside the handshake's
        assert client.protocol_version == MODERN_PROTOCOL_VERSIONS[-1]
        result = view(
            # the channel's longest wait: a loaded machine's first turn may take the default
            await client.call_tool(
                "agent_start", {"message": "hold on", "wait": 20}, progress_callback=told
            )
        )
    assert (result["status"], result["answer"]) == ("completed", "released")
    [held] = result["calls"]
    assert (held["name"], held["status"], held["output"]) == ("hold", "completed", "released")
    messages = [m for _, m in progress]
    assert (messages[0] or "").startswith(f"{result['session_id']} turn_0: ")
    assert "calling hold" in messages and "hold: completed" in messages
    assert messages[-1] == "turn.completed turn_0"
    values = [v for v, _ in progress]
    assert values == sorted(set(values)), "progress must grow with every notification"


async def test_a_tool_call_reports_progress_while_it_runs(serve: Serve) -> None:
    await held_and_told(await serve([call("hold"), say("released")], tools=("hold",)))


async def test_what_the_turn_did_before_the_call_read_the_log_is_told_too(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn the call just started may be well on before the call reads the log (a loaded
    machine ran its first step first): its tool's call is in the log the call reads, and
    is told all the same. (It was read in silence: the caller never heard of the call, and
    a caller waiting for it to let the tool go waited out its whole ``wait``.)"""
    server = await serve([call("hold"), say("released")], tools=("hold",))
    reads = ChannelSessions.latest_turn

    async def after_the_tool_started(self: ChannelSessions, session_id: str) -> str | None:
        # the call reads the log once the tool runs and what the turn said before is written
        await asyncio.to_thread(wait_for_file, server.app_root / f"hold-{session_id}.started")
        await self.service.log.writer(session_id).flush()
        return await reads(self, session_id)

    monkeypatch.setattr(ChannelSessions, "latest_turn", after_the_tool_started)
    await held_and_told(server)


async def test_a_dropped_connection_resumes_from_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over a real socket (uvicorn): the caller loses its connection while the turn runs;
    the same call again, with the same idempotency key, answers the turn the first one
    started, and nothing is done twice."""
    root = scripted(tmp_path / "app", [call("hold"), say("released")], tools=("hold",))
    monkeypatch.chdir(root)  # where the tool looks for its release
    server = ThreadedServer(root, token=TOKEN, channels=[CHANNEL])
    url = await asyncio.to_thread(server.start)
    arguments = {"message": "hold on", "idempotency_key": "7c0b0d4e-first-try", "wait": 20}
    running = asyncio.Event()

    async def told(value: float, total: float | None, message: str | None) -> None:
        if message == "calling hold":
            running.set()

    async def first_try() -> None:
        async with connect(url, TOKEN) as client:
            await client.call_tool("agent_start", arguments, progress_callback=told)

    try:
        dropped = asyncio.create_task(first_try())
        told_running = asyncio.create_task(running.wait())
        # never a hang: a call that ends before its tool runs is this test's failure
        await asyncio.wait({dropped, told_running}, return_when=asyncio.FIRST_COMPLETED)
        told_running.cancel()
        assert running.is_set(), "the call ended before its turn called the tool"
        dropped.cancel()  # the client goes, and its connection with it
        with pytest.raises(asyncio.CancelledError):
            await dropped
        (root / "release").write_text("go")

        async with connect(url, TOKEN) as client:
            again = view(await client.call_tool("agent_start", arguments))
            other = {**arguments, "message": "something else"}
            code, message = refusal(await client.call_tool("agent_start", other))
        async with httpx.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}) as http:
            listed = (await http.get(url + "/eve/v1/sessions")).json()["sessions"]
    finally:
        await asyncio.to_thread(server.stop)
    assert (again["turn_id"], again["status"], again["answer"]) == (
        "turn_0",
        "completed",
        "released",
    )
    assert [s["sessionId"] for s in listed] == [again["session_id"]]
    assert code == "idempotency_key_reused" and "7c0b0d4e-first-try" in message
    assert "mcp:" not in message, "the key is the caller's, not the store's"


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


async def test_the_latency_probe_reads_a_whole_turn(serve: Serve) -> None:
    """bench/channel_probes/mcp.py, against the channel: a turn answered over SSE."""
    server = await serve([say("4")])
    headers = {"authorization": f"Bearer {TOKEN}"}
    transport = server.async_transport()
    async with httpx.AsyncClient(base_url=ROOT, headers=headers, transport=transport) as http:
        measured = await probe(http, PATH)
    assert measured.first_byte >= 0 and all(gap >= 0 for gap in measured.gaps)
