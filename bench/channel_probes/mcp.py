"""The ``mcp`` channel's latency probe: one ``agent_start`` over Streamable HTTP, as an MCP
client sends it (initialize, then ``tools/call`` with a progress token), its answer read as
the SSE stream it is. The first byte is the stream's first line; the events are its SSE
messages: each progress notification, then the result."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import httpx
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from bench.channel_probes import Probe

KIND = "mcp"
OPTIONS: dict[str, Any] = {}

#: what an MCP client sends with every POST (the server answers JSON or an SSE stream)
HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": LATEST_HANDSHAKE_VERSION,
}
CALL_ID = 2


def _rpc(method: str, params: dict[str, Any], *, id: int | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    return message if id is None else {**message, "id": id}


async def _initialize(client: httpx.AsyncClient, path: str) -> None:
    hello = {
        "protocolVersion": LATEST_HANDSHAKE_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "eve-bench", "version": "1"},
    }
    answer = await client.post(path, json=_rpc("initialize", hello, id=1), headers=HEADERS)
    answer.raise_for_status()
    done = await client.post(path, json=_rpc("notifications/initialized", {}), headers=HEADERS)
    done.raise_for_status()


async def probe(client: httpx.AsyncClient, path: str) -> Probe:
    await _initialize(client, path)
    call = _rpc(
        "tools/call",
        {
            "name": "agent_start",
            "arguments": {"message": "What is 2 + 2?"},
            "_meta": {"progressToken": "bench"},
        },
        id=CALL_ID,
    )
    sent = time.perf_counter()
    first: float | None = None
    events: list[float] = []
    result: dict[str, Any] | None = None
    async with client.stream("POST", path, json=call, headers=HEADERS) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            now = time.perf_counter()
            first = now if first is None else first
            if not line.startswith("data:"):
                continue
            events.append(now)
            message = json.loads(line.removeprefix("data:"))
            if message.get("id") == CALL_ID:
                result = message
                break
    if first is None or result is None:
        raise RuntimeError(f"{path}: the call's stream ended without its result")
    status = result.get("result", {}).get("structuredContent", {}).get("status")
    if status != "completed":
        raise RuntimeError(f"{path}: agent_start answered {status or result!r}, not completed")
    return Probe(first_byte=first - sent, gaps=[b - a for a, b in itertools.pairwise(events)])
