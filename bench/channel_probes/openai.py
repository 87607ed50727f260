"""The ``openai`` channel's probe: one streamed chat completion, timed per chunk."""

from __future__ import annotations

import itertools
import time

import httpx

from bench.channel_probes import Probe

KIND = "openai"
#: the model id the probe names (the channel's default would be its name, unknown here)
MODEL = "eve-bench"
OPTIONS = {"model": MODEL}


async def probe(client: httpx.AsyncClient, path: str) -> Probe:
    """A fresh session's turn through ``POST <path>/v1/chat/completions`` with
    ``stream: true``, as OpenAI's SDKs read it: server-sent ``data:`` chunks to ``[DONE]``."""
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hello"}],
        "stream": True,
    }
    sent = time.perf_counter()
    first_byte: float | None = None
    marks: list[float] = []
    async with client.stream("POST", f"{path}/v1/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            now = time.perf_counter()
            if first_byte is None:
                first_byte = now - sent
            if line.startswith("data: "):
                marks.append(now)
                if line == "data: [DONE]":
                    break
    assert first_byte is not None, "the stream sent nothing"
    return Probe(first_byte=first_byte, gaps=[b - a for a, b in itertools.pairwise(marks)])
