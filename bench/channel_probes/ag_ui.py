"""The ``ag_ui`` kind's latency probe: one run as ``@ag-ui/client`` makes it (a POSTed
``RunAgentInput``, the answer read as Server-Sent Events), each ``data:`` line an event."""

from __future__ import annotations

import itertools
import json
import time
import uuid

import httpx

from bench.channel_probes import Probe

KIND = "ag_ui"
OPTIONS: dict[str, object] = {}


async def probe(client: httpx.AsyncClient, path: str) -> Probe:
    run = {
        "threadId": f"bench-{uuid.uuid4()}",
        "runId": str(uuid.uuid4()),
        "messages": [{"id": str(uuid.uuid4()), "role": "user", "content": "Hello"}],
    }
    headers = {"Accept": "text/event-stream"}
    sent = time.perf_counter()
    first_byte: float | None = None
    stamps: list[float] = []
    last = ""
    async with client.stream("POST", path, json=run, headers=headers) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if first_byte is None:
                first_byte = time.perf_counter() - sent
            if line.startswith("data: "):
                stamps.append(time.perf_counter())
                last = json.loads(line[len("data: ") :])["type"]
    if last != "RUN_FINISHED" or first_byte is None:
        raise RuntimeError(f"the ag_ui run did not finish (its last event: {last or 'none'})")
    return Probe(first_byte=first_byte, gaps=[b - a for a, b in itertools.pairwise(stamps)])
