"""How many log events a channel reads to serve one turn, as a session's history grows.

A channel is a view over the session's event log; serving a turn should cost that turn's
events, not every event the session ever had. One uvicorn on loopback (``channel_latency``'s)
serves its ``offline/test`` agent with one tool and a channel of each kind whose turn this
measures (``openai``, ``a2a``, ``ag_ui``, ``ai_sdk``, ``mcp``). One session grows through
the session API; at each history size every kind sends it one message and follows that turn
to its end, and every event the process's ``EventLog.read`` yields meanwhile is counted
(the channel's reads: nothing else reads the log then). A reader that starts at index 0
reads O(history) per turn; one that starts where the turn starts reads about the turn.

Run alone with ``python -m bench.channel_reads [--quick]``. Results land in
``bench/results/channel_reads.{json,md}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench._machine import machine_info, package_version
from bench._results import publish
from bench.channel_latency import TOKEN, _Serving, probe_modules, write_app
from bench.channel_probes.mcp import HEADERS as MCP_HEADERS
from bench.channel_probes.openai import MODEL

#: the history sizes (turns) at which each kind's turn is measured
SIZES, QUICK_SIZES = (10, 200), (3, 12)
KINDS = ("openai", "a2a", "ag_ui", "ai_sdk", "mcp")

#: one message to the session through a kind's door, answered once the turn has ended
Turn = Callable[[httpx.AsyncClient, str], Awaitable[None]]


class ReadCounter:
    """Counts the events ``EventLog.read`` yields in this process while installed."""

    def __init__(self) -> None:
        self.events = 0

    def install(self) -> Callable[[], None]:
        from eve.sessions.event_log import EventLog

        real = EventLog.read
        counter = self

        async def read(
            log: EventLog, session_id: str, start: int, *, follow: bool, fast: bool = False
        ) -> AsyncIterator[str]:
            async for line in real(log, session_id, start, follow=follow, fast=fast):
                counter.events += bool(line)
                yield line

        EventLog.read = read  # type: ignore[method-assign]

        def uninstall() -> None:
            EventLog.read = real  # type: ignore[method-assign]

        return uninstall


async def _sse_until(response: httpx.Response, done: Callable[[str], bool]) -> None:
    async for line in response.aiter_lines():
        if line.startswith("data:") and done(line.removeprefix("data:").strip()):
            return


async def openai_turn(client: httpx.AsyncClient, session_id: str) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]}
    answer = await client.post(
        "/channels/openai/v1/chat/completions",
        json=body,
        headers={"x-eve-session-id": session_id},
    )
    answer.raise_for_status()


async def a2a_turn(client: httpx.AsyncClient, session_id: str) -> None:
    message = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"text": "hello"}],
        "contextId": session_id,
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    answer = await client.post("/channels/a2a", json=call, headers={"A2A-Version": "1.0"})
    answer.raise_for_status()
    assert "error" not in answer.json(), answer.text


async def ag_ui_turn(client: httpx.AsyncClient, session_id: str) -> None:
    run = {
        "threadId": session_id,
        "runId": uuid.uuid4().hex,
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": "hello"}],
    }
    async with client.stream("POST", "/channels/ag_ui", json=run) as response:
        response.raise_for_status()
        await _sse_until(response, lambda data: json.loads(data)["type"] == "RUN_FINISHED")


async def ai_sdk_turn(client: httpx.AsyncClient, session_id: str) -> None:
    message = {"id": uuid.uuid4().hex, "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    body = {"id": session_id, "messages": [message], "trigger": "submit-message"}
    async with client.stream("POST", "/channels/ai_sdk", json=body) as response:
        response.raise_for_status()
        await _sse_until(response, lambda data: data == "[DONE]")


async def mcp_turn(client: httpx.AsyncClient, session_id: str) -> None:
    arguments = {"session_id": session_id, "message": "hello", "wait": 60}
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "agent_update", "arguments": arguments},
    }
    async with client.stream("POST", "/channels/mcp", json=call, headers=MCP_HEADERS) as response:
        response.raise_for_status()
        await _sse_until(response, lambda data: json.loads(data).get("id") == 2)


TURNS: dict[str, Turn] = {
    "openai": openai_turn,
    "a2a": a2a_turn,
    "ag_ui": ag_ui_turn,
    "ai_sdk": ai_sdk_turn,
    "mcp": mcp_turn,
}


async def _settled(client: httpx.AsyncClient, session_id: str, start: int) -> int:
    """Follow the session's log from ``start`` until its turn ends; the next index."""
    path = f"/eve/v1/session/{session_id}/stream"
    async with client.stream("GET", path, params={"startIndex": start}) as stream:
        stream.raise_for_status()
        async for line in stream.aiter_lines():
            if line.strip():
                event = json.loads(line)
                start = event["meta"]["index"] + 1
                if event["type"] == "session.waiting":
                    return start
    raise RuntimeError(f"the stream of {session_id} ended before its turn did")


async def _grow(client: httpx.AsyncClient, session_id: str, turns: int, start: int) -> int:
    """Add ``turns`` turns through the session API, one after the other."""
    for _ in range(turns):
        sent = await client.post(f"/eve/v1/session/{session_id}", json={"message": "more"})
        sent.raise_for_status()
        start = await _settled(client, session_id, start)
    return start


async def measure(
    client: httpx.AsyncClient, sizes: tuple[int, ...], counter: ReadCounter
) -> dict[str, Any]:
    """Per history size (turns) and kind: the events read for one turn through the kind,
    the turn's own events, and the log's length before it."""
    rows: dict[str, Any] = {}
    created = await client.post("/eve/v1/session", json={"message": "start"})
    created.raise_for_status()
    session_id = created.json()["sessionId"]
    index = await _settled(client, session_id, 0)
    turns = 1
    for size in sizes:
        index = await _grow(client, session_id, size - turns, index)
        turns = size
        row: dict[str, Any] = {}
        for kind, turn in TURNS.items():
            before, counter.events = index, 0
            await turn(client, session_id)
            read = counter.events
            index = await _settled(client, session_id, index)
            turns += 1
            row[kind] = {"events_read": read, "turn_events": index - before, "log": before}
        rows[str(size)] = row
    return rows


async def _measured(url: str, sizes: tuple[int, ...], counter: ReadCounter) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        return await measure(client, sizes, counter)


def _markdown(report: dict[str, Any]) -> str:
    sizes = list(report["sizes"])
    lines = [
        "# channel_reads",
        "",
        f"{report['date']} · offline/test, one tool · events a channel reads for one turn "
        "of a session with the given history (the turn's own events in brackets)",
        "",
        "| kind | " + " | ".join(f"{size} turns" for size in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for kind in KINDS:
        cells = []
        for size in sizes:
            row = report["sizes"][size][kind]
            cells.append(f"{row['events_read']} ({row['turn_events']})")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run(*, quick: bool = False) -> dict[str, Any]:
    from eve.compiler import compile_to_disk

    sizes = QUICK_SIZES if quick else SIZES
    counter = ReadCounter()
    with tempfile.TemporaryDirectory(prefix="eve-channel-reads-") as tmp:
        root = Path(tmp)
        probes, _ = probe_modules()
        write_app(root, {kind: probes[kind] for kind in KINDS})  # channel_latency's agent
        compile_to_disk(root)
        uninstall = counter.install()
        try:
            with _Serving(root) as url:
                rows = asyncio.run(_measured(url, sizes, counter))
        finally:
            uninstall()
    report = {
        "name": "channel_reads",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine_info(),
        "versions": {"eve": package_version("eve")},
        "sizes": rows,
    }
    publish("channel_reads", report, _markdown(report), quick=quick)
    return report


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
