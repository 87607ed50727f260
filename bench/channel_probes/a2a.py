"""The a2a channel's probe: one SendStreamingMessage, its SSE events timed as they arrive."""

from __future__ import annotations

import itertools
import time
import uuid
from typing import Any

import httpx

from bench.channel_probes import Probe

KIND = "a2a"
OPTIONS: dict[str, Any] = {}


def _request(text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {
            "message": {
                "messageId": uuid.uuid4().hex,
                "role": "ROLE_USER",
                "parts": [{"text": text}],
            }
        },
    }


async def probe(client: httpx.AsyncClient, path: str) -> Probe:
    """One new task, streamed to its end as an A2A client reads it: the first byte of the
    answer, then the time between one SSE event and the next."""
    headers = {"A2A-Version": "1.0", "accept": "text/event-stream"}
    started = time.perf_counter()
    first_byte: float | None = None
    arrivals: list[float] = []
    async with client.stream("POST", path, json=_request("hello"), headers=headers) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            now = time.perf_counter()
            if first_byte is None:
                first_byte = now - started
            if line.startswith("data:"):
                arrivals.append(now)
    assert first_byte is not None, "the stream ended without a byte"
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
    return Probe(first_byte=first_byte, gaps=gaps)
