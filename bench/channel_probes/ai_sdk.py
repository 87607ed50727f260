"""The ai_sdk channel's probe: one chat request, its UI message stream read as the ``ai``
package's transport reads it (server-sent events, one chunk each)."""

from __future__ import annotations

import itertools
import time
import uuid
from typing import Any

import httpx

from bench.channel_probes import Probe

KIND = "ai_sdk"
OPTIONS: dict[str, Any] = {}

#: the stream's last event
DONE = "data: [DONE]"


def chat_request(text: str) -> dict[str, Any]:
    """A new chat's first request, as ``DefaultChatTransport.sendMessages`` sends it."""
    chat = f"probe-{uuid.uuid4().hex}"
    message = {"id": f"{chat}-0", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": chat, "messages": [message], "trigger": "submit-message"}


async def probe(client: httpx.AsyncClient, path: str) -> Probe:
    """``first_byte``: to the response's first byte (the ``start`` chunk, written before
    the turn's first event); ``gaps``: between the chunks that follow, to ``[DONE]``."""
    sent = time.perf_counter()
    first_byte: float | None = None
    arrivals: list[float] = []
    done = False
    async with client.stream("POST", path, json=chat_request("hello")) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if first_byte is None:
                first_byte = time.perf_counter() - sent
            if line.startswith("data: "):
                arrivals.append(time.perf_counter())
                done = line == DONE
                if done:
                    break
    if first_byte is None or not done:
        raise RuntimeError("the ai_sdk stream ended before [DONE]")
    return Probe(first_byte=first_byte, gaps=[b - a for a, b in itertools.pairwise(arrivals)])
