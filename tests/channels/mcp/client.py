"""The ``mcp`` SDK's client (``streamable_http_client`` + ``ClientSession``) talking to an
``InProcessServer``: its ``httpx2`` client sends each request through the server's
``TestClient``, so no port opens and the app keeps running on the loop its lifespan
started. A response is a live stream (progress arrives as it is sent), and closing it is a
dropped connection: the app's request is cancelled, as a server's is when its client goes.
Requests find the server's current ``TestClient``, so a client outlives a restart."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from tests.sessions.inprocess import ROOT, InProcessServer

PATH = "/channels/agent"


class ThroughServer(httpx2.AsyncBaseTransport):
    def __init__(self, server: InProcessServer) -> None:
        self.server = server

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        http = self.server.http
        assert http is not None, "start() the server first"
        inner = http.build_request(
            request.method,
            str(request.url),
            headers=request.headers.multi_items(),
            content=request.content,
        )
        response = await asyncio.to_thread(http.send, inner, stream=True)
        return httpx2.Response(
            response.status_code,
            headers=response.headers.multi_items(),
            stream=_Body(response),
        )


class _Body(httpx2.AsyncByteStream):
    def __init__(self, response: Any) -> None:
        self.response = response
        self.chunks: Iterator[bytes] = response.iter_raw()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while (chunk := await asyncio.to_thread(next, self.chunks, None)) is not None:
            yield chunk

    async def aclose(self) -> None:
        await asyncio.to_thread(self.response.close)


@contextlib.asynccontextmanager
async def connect(server: InProcessServer, token: str | None) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with the channel, sending ``token`` as the bearer."""
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    http = httpx2.AsyncClient(
        transport=ThroughServer(server), headers=headers, timeout=httpx2.Timeout(30, read=60)
    )
    async with (
        http,
        streamable_http_client(ROOT + PATH, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def view(result: CallToolResult) -> dict[str, Any]:
    """A successful call's ``TurnView``: its structured content, which is its text too."""
    assert not result.is_error, result.content
    structured: dict[str, Any] = result.structured_content
    [text] = result.content
    assert text.type == "text" and json.loads(text.text) == structured
    return structured


def refusal(result: CallToolResult) -> tuple[str, str]:
    """A refused call's error code and message."""
    assert result.is_error, result.structured_content
    error: dict[str, str] = result.structured_content
    return error["error"], error["message"]
